"""The package's public names resolve to the functions and classes later code calls."""

from __future__ import annotations

import pytest

import kura.models as models


@pytest.mark.parametrize("name", models.__all__)
def test_public_names_resolve(name: str) -> None:
    value = getattr(models, name)
    assert callable(value)
    assert not isinstance(value, type(models))


def test_unknown_name() -> None:
    with pytest.raises(AttributeError):
        _ = models.no_such_name
