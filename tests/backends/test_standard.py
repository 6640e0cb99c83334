"""The standard verbs (``kura.backends.standard``): each default is the one answer of the
backends that inherit it, and none is dead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kura.backends.registry import backend_names, get_backend
from kura.backends.standard import CheckoutBackend, StandardBackend
from kura.errors import Unsupported

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KURA_BACKEND_MODULES", "toy-trainer=tests.backends.toy.backend")
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


def _defaults(base: type) -> set[str]:
    """The verbs ``base`` answers itself (its abstract hooks are the subclass's to write)."""
    return {
        name
        for name, value in vars(base).items()
        if callable(value) and name[0] != "_" and not getattr(value, "__isabstractmethod__", False)
    }


def test_every_backend_is_built_on_the_standard_verbs() -> None:
    assert all(isinstance(get_backend(name), StandardBackend) for name in backend_names())
    checkout = {n for n in backend_names() if isinstance(get_backend(n), CheckoutBackend)}
    assert checkout == {"musubi-tuner", "ai-toolkit"}


@pytest.mark.parametrize("base", [StandardBackend, CheckoutBackend], ids=lambda b: b.__name__)
def test_no_default_verb_is_dead(base: type) -> None:
    """A default that every backend overrides is a copy nobody runs: delete it instead."""
    backends = [get_backend(name) for name in backend_names()]
    inherited = {
        verb
        for verb in _defaults(base)
        for backend in backends
        if isinstance(backend, base) and getattr(type(backend), verb) is vars(base)[verb]
    }
    assert _defaults(base) - inherited == set()


def test_a_trainer_without_an_image_says_how_it_runs_instead() -> None:
    moss = get_backend("kohakumoss")
    with pytest.raises(Unsupported, match="KohakuMoss has no Docker image") as caught:
        moss.image(None)
    assert "execution.executor: host" in (caught.value.hint or "")
    assert "kura backend install kohakumoss" in (caught.value.hint or "")
