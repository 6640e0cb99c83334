"""Following a trial: loss reported to the pruner, weak trials stopped, caches kept.

The follower reads the trainer's own progress (``Backend.progress`` over the train step's
log) while the detached supervisor runs the trial, reports the smoothed loss at each new step
(``trial.report``), and asks the asynchronous successive-halving pruner whether to stop. A
stop is ``kura run cancel``'s path: SIGTERM to the trainer's process group, SIGKILL after the
grace, the run marked cancelled; the trial records why (pruner, step, loss). A trial at its
last step (the trainer's own total) is never pruned: it is scored. A lease lost to another
worker's reaper stops the trial the same way.

Between looks the follower waits for the trainer's own writes: it returns as soon as the
run's state.json or the train log changes (a new step, the supervisor settling the run),
checking their stat every ``WATCH_INTERVAL`` seconds, and looks anyway after ``poll``
seconds (the lease check). A trial that ends is noticed within one interval, not a fixed
sleep later.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kura.sweep.values import EarlyStop

__all__ = ["Followed", "follow_trial", "wait_for_writes"]

STOP_GRACE_SECONDS = 10.0
WATCH_INTERVAL = 0.01
"""Seconds between two stats of the files a follower waits on (two ``stat`` calls)."""


@dataclass
class Followed:
    status: str
    stopped: EarlyStop | None
    last: Any
    seconds: float


def follow_trial(
    run_dir: Path,
    trial: Any,
    *,
    progress: Callable[[Path], Any],
    prune: bool,
    lease_lost: Callable[[], bool],
    on_state: Callable[[Any], None],
    poll: float = 0.2,
    report: bool = True,
) -> Followed:
    """Follow until the run ends; ``report`` False (a multi-objective study, which takes no
    intermediate values) follows without telling the study anything, and never prunes."""
    from kura.execution.executors import cancel_run
    from kura.execution.runs import refresh_state

    started = time.monotonic()
    last_step = 0
    stopped: EarlyStop | None = None
    latest = None
    while True:
        state = refresh_state(run_dir)
        on_state(state)
        log = run_dir / "logs" / "train.log"
        if log.exists():
            latest = progress(log)
            value = latest.loss_ema if latest.loss_ema is not None else latest.loss
            if report and latest.step is not None and latest.step > last_step and value is not None:
                last_step = latest.step
                trial.report(float(value), latest.step)
                if (
                    prune
                    and stopped is None
                    and not state.is_terminal
                    and not _at_last_step(latest)
                    and trial.should_prune()
                ):
                    stopped = EarlyStop(
                        by="successive halving (asynchronous)",
                        step=latest.step,
                        loss=float(value),
                        why="its loss at this rung was below the top 1/reduction_factor "
                        "of the trials that reached it",
                    )
                    cancel_run(run_dir, grace=STOP_GRACE_SECONDS)
                    continue
        if stopped is None and not state.is_terminal and lease_lost():
            stopped = EarlyStop(by="lease lost", why="another worker reaped this trial's lease")
            cancel_run(run_dir, grace=STOP_GRACE_SECONDS)
            continue
        if state.is_terminal:
            if log.exists():
                latest = progress(log)
            status = (
                state.status
                if stopped is None
                else ("lost" if stopped.by == "lease lost" else "pruned")
            )
            return Followed(status, stopped, latest, time.monotonic() - started)
        wait_for_writes([run_dir / "state.json", log], timeout=poll)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def wait_for_writes(paths: list[Path], *, timeout: float) -> bool:
    """Wait until one of ``paths`` changes (written, replaced, created or removed), or
    ``timeout`` seconds pass; True when a change ended the wait."""
    before = [_stamp(path) for path in paths]
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(WATCH_INTERVAL, left))
        if [_stamp(path) for path in paths] != before:
            return True


def _at_last_step(progress: Any) -> bool:
    """A trial that reached its last step is past the point where stopping saves anything:
    it is writing its validation loss and LoRA, so it is scored, never pruned."""
    return bool(progress.total is not None and progress.step >= progress.total)
