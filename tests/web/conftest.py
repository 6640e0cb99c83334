from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.web.workspace_builder import WebWorkspace, build_workspace


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebWorkspace]:
    """One realistic workspace per test module (launching a run takes a few seconds)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield build_workspace(tmp_path_factory.mktemp("web"), monkeypatch)
