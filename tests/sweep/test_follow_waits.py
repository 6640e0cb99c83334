"""Following a trial reacts to the trainer's own writes (state.json, the train log), not to
a fixed sleep: the follower looks again as soon as a file changed (issue 27: 0.2 s sleeps
were a third of a trial's bookkeeping)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kura.execution.state import new_state, write_state
from kura.sweep import follow


def _state(run_dir: Path, status: str) -> None:
    state = new_state("r1", run_dir, "host", ["train"], [])
    state.move_to("training")
    if status != "training":
        state.move_to(status)  # type: ignore[arg-type]
    write_state(run_dir, state)


class _Trial:
    def report(self, value: float, step: int) -> None:
        raise AssertionError("no step was logged")

    def should_prune(self) -> bool:
        return False


def test_a_wait_ends_at_the_first_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    watched = tmp_path / "state.json"
    watched.write_text("{}")
    asked: list[float] = []

    def sleep(seconds: float) -> None:
        asked.append(seconds)
        if len(asked) == 3:
            watched.write_text('{"status": "succeeded"}')

    monkeypatch.setattr(follow.time, "sleep", sleep)
    assert follow.wait_for_writes([watched, tmp_path / "absent.log"], timeout=60.0)
    assert len(asked) == 3 and all(s <= follow.WATCH_INTERVAL for s in asked)


def test_a_file_that_appears_ends_the_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "train.log"
    monkeypatch.setattr(follow.time, "sleep", lambda seconds: log.write_text("step 1\n"))
    assert follow.wait_for_writes([log], timeout=60.0)


def test_a_trial_that_ends_is_noticed_at_its_write_not_a_poll_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kura.execution.runs as runs
    from kura.execution.state import read_state

    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    _state(run_dir, "training")
    monkeypatch.setattr(runs, "refresh_state", lambda d: read_state(d))
    asked: list[float] = []

    def sleep(seconds: float) -> None:
        asked.append(seconds)
        if len(asked) == 1:
            _state(run_dir, "succeeded")  # the supervisor settles the run

    monkeypatch.setattr(follow.time, "sleep", sleep)
    seen: list[Any] = []
    followed = follow.follow_trial(
        run_dir,
        _Trial(),
        progress=lambda log: None,
        prune=False,
        lease_lost=lambda: False,
        on_state=seen.append,
        poll=30.0,
    )
    assert followed.status == "succeeded"
    assert sum(asked) <= follow.WATCH_INTERVAL, asked
    assert [s.status for s in seen] == ["training", "succeeded"]
