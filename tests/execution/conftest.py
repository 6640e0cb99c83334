"""Execution tests: stop any run a test leaves behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kura.execution.executors import cancel_run
from kura.execution.state import read_state


@pytest.fixture(autouse=True)
def _stop_leftover_runs(tmp_path: Path) -> Iterator[None]:
    yield
    for state_file in tmp_path.rglob("state.json"):
        try:
            if not read_state(state_file.parent).is_terminal:
                cancel_run(state_file.parent, grace=2)
        except Exception:  # best effort: the test result stands
            continue
