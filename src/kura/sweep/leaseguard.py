"""The guard of a trial's run: its supervisor stops the trainer when the trial's lease is gone.

A worker holds a lease on the trial it runs (:mod:`kura.sweep.lease`) and follows the run;
a worker killed with SIGKILL renews nothing and follows nothing, and before this guard its
trainer kept training after the trial was re-queued (two trainers on one GPU, the old trial
``running`` for ever). So the worker hands the run a guard (:mod:`kura.execution.guard`):
``python -m kura.sweep.leaseguard …``, which the run's own supervisor starts beside the
steps, on whatever machine the run is. The supervisor starts it a third of a lease after
the steps begin (:func:`guard_for`: the worker took the lease just before the launch, so a
trial shorter than that never starts a guard, which on a small GPU competed with the trainer
for the CPU); from then on, at once and every third of a lease, it reads the trial in the
study (the same storage every worker reaches) and gives its verdict when

- the trial is no longer RUNNING there (a reaper failed it and re-queued its parameters), or
- its lease ran out (``kura.lease_until`` is past: the worker stopped renewing it, whether or
  not anyone has reaped it yet), or
- the storage could not be read for a whole lease (the worker could not renew it either).

With the verdict it ends the trial's record in the sweep folder (``lost``, with the reason)
and prints the reason for the supervisor, which stops the trainer and ends the run
cancelled. It exits quietly when its parent, the supervisor, is gone. A storage password is
never in its argv: the worker passes the URL with a password through the environment
(:data:`STORAGE_ENV`), which reaches the supervisor and this guard but never a trainer step.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.sweep.lease import LEASE_KEY

if TYPE_CHECKING:
    from kura.execution.guard import Guard

__all__ = [
    "STORAGE_ENV",
    "LeaseTarget",
    "guard_argv",
    "guard_for",
    "lease_verdict",
    "look_interval",
    "main",
]

STORAGE_ENV = "KURA_SWEEP_STORAGE_URL"


@dataclass(frozen=True)
class LeaseTarget:
    """The trial whose lease a guard watches, and where its record lives."""

    workspace: Path
    sweep: str
    number: int
    trial_id: int
    storage: str
    """The storage URL without its password (as sweep.json keeps it)."""
    lease_seconds: float


def look_interval(lease_seconds: float) -> float:
    """Seconds between two looks at the trial: a third of a lease (a renewal missed twice
    still leaves a look before the lease ends)."""
    return max(lease_seconds / 3, 0.1)


def guard_for(target: LeaseTarget, owner: str) -> Guard:
    """The run's guard on ``target``'s lease, started one look interval after the steps."""
    from kura.execution.guard import Guard

    return Guard(
        argv=guard_argv(target),
        owner=owner,
        start_after_seconds=look_interval(target.lease_seconds),
    )


def guard_argv(target: LeaseTarget) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kura.sweep.leaseguard",
        "--workspace",
        str(target.workspace),
        "--sweep",
        target.sweep,
        "--number",
        str(target.number),
        "--trial-id",
        str(target.trial_id),
        "--storage",
        target.storage,
        "--lease-seconds",
        str(target.lease_seconds),
    ]


def lease_verdict(target: LeaseTarget, trial: Any, now: float) -> str | None:
    """Why the run must stop, from the trial as the study has it (None: it may go on)."""
    from optuna.trial import TrialState

    which = f"trial {target.number} of sweep {target.sweep}"
    if trial.state != TrialState.RUNNING:
        lost = trial.user_attrs.get("kura.lost")
        why = f": {lost}" if lost else ""
        return f"{which} is {trial.state.name} in the study, no longer this run's{why}"
    until = trial.user_attrs.get(LEASE_KEY)
    if until is not None and float(until) < now:
        worker = trial.user_attrs.get("kura.worker", "its worker")
        moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(until)))
        return f"the lease on {which} ran out at {moment}: {worker} stopped renewing it"
    return None


def _storage_url(redacted: str) -> str:
    """The URL with its password when the worker passed one through the environment."""
    from kura.sweep.storage import redact

    given = os.environ.get(STORAGE_ENV)
    return given if given and redact(given) == redacted else redacted


def watch(target: LeaseTarget) -> str | None:
    """Look now and every third of a lease until the run must stop; the reason, or None when
    the supervisor went away. The supervisor starts it a look interval after the steps
    (:func:`guard_for`), so the first look is already a third of a lease after the launch."""
    parent = os.getppid()
    every = look_interval(target.lease_seconds)
    storage: Any = None
    failing_since: float | None = None
    while os.getppid() == parent:
        now = time.time()
        try:
            storage = storage or _open_storage(target)
            verdict = lease_verdict(target, storage.get_trial(target.trial_id), now)
            failing_since = None
        except Exception as exc:  # the storage is unreachable: only a whole lease of it counts
            storage = None
            failing_since = failing_since or now
            if now - failing_since >= target.lease_seconds:
                return (
                    f"the study storage {target.storage} could not be read for "
                    f"{target.lease_seconds:g} s ({type(exc).__name__}: {exc}); trial "
                    f"{target.number}'s lease cannot be renewed either"
                )
            verdict = None
        if verdict is not None:
            return verdict
        time.sleep(every)
    return None


def _open_storage(target: LeaseTarget) -> Any:
    from kura.sweep.records import sweep_dir
    from kura.sweep.storage import open_storage
    from kura.workspace import Workspace

    folder = sweep_dir(Workspace(target.workspace), target.sweep)
    return open_storage(_storage_url(target.storage), folder)


def end_trial_record(target: LeaseTarget, reason: str) -> None:
    """The trial's record in the sweep folder ends ``lost`` (a record already ended stays)."""
    from datetime import UTC, datetime

    from kura.sweep.records import load_trials, write_trial
    from kura.workspace import Workspace

    workspace = Workspace(target.workspace)
    for record in load_trials(workspace, target.sweep):
        if record.number == target.number and record.status == "running":
            finished = datetime.now(UTC).replace(microsecond=0).isoformat()
            update = {"status": "lost", "reason": reason, "finished_at": finished}
            write_trial(workspace, record.updated(**update))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kura.sweep.leaseguard")
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--sweep", required=True)
    parser.add_argument("--number", type=int, required=True)
    parser.add_argument("--trial-id", type=int, required=True)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--lease-seconds", type=float, required=True)
    args = parser.parse_args(argv)
    target = LeaseTarget(
        workspace=args.workspace,
        sweep=args.sweep,
        number=args.number,
        trial_id=args.trial_id,
        storage=args.storage,
        lease_seconds=args.lease_seconds,
    )
    reason = watch(target)
    if reason is None:
        return 3  # the supervisor is gone: nobody to tell
    end_trial_record(target, reason)
    print(reason, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
