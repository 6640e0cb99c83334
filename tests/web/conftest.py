from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.web.sweep_builder import (
    ParetoWorkspace,
    SweepWorkspace,
    build_pareto_workspace,
    build_sweep_workspace,
)
from tests.web.workspace_builder import WebWorkspace, build_workspace


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebWorkspace]:
    """One realistic workspace per test module (launching a run takes a few seconds)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield build_workspace(tmp_path_factory.mktemp("web"), monkeypatch)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SweepWorkspace]:
    """A workspace with a real journal-file sweep over the toy trainer (one per module)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield build_sweep_workspace(tmp_path_factory.mktemp("sweep"), monkeypatch)


@pytest.fixture(scope="module")
def pareto_swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ParetoWorkspace]:
    """A workspace with a real ``objective.mode: pareto`` sweep over the toy trainer."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield build_pareto_workspace(tmp_path_factory.mktemp("pareto"), monkeypatch)
