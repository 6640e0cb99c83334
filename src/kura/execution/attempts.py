"""A run's attempts, read from its state files: the current one and the archived ones.

A relaunch or resume archives the finished attempt's state as ``runs/<id>/attempts/<n>.json``
and moves its step logs to ``runs/<id>/attempts/<n>/logs/`` (a relaunch its ``output/`` to
``attempts/<n>/output/`` too); the current attempt is ``state.json`` with its logs in
``logs/``. Each attempt's :class:`~kura.backends.base.AttemptRef` is what a backend's
``loss_history`` credits the trainer's files to.

A SkyPilot run's one Kura attempt may hold several attempts of its managed job: each time
SkyPilot recovers the job (a preempted spot VM) the task's script runs again and appends a
line to ``logs/kura-attempts.tsv`` in the bucket (number, start, the saved state it resumed
from; :mod:`kura.execution.executors.skypilot`), which ``kura run collect`` brings back
into ``logs/``; :func:`job_attempts` reads it. Only reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kura.backends.base import AttemptRef
from kura.errors import InvalidInput
from kura.execution.state import state_path
from kura.schema.state import RunState, state_adapter

__all__ = ["Attempt", "JobAttempt", "attempt_refs", "job_attempts", "run_attempts"]

JOB_ATTEMPTS = "kura-attempts.tsv"
"""The job's own attempt record in the logs folder (the SkyPilot executor's ``ATTEMPTS_FILE``)."""


@dataclass(frozen=True)
class Attempt:
    """One attempt of a run: its state document, where its logs are, whether it is current."""

    number: int
    state: RunState
    log_dir: Path
    current: bool

    @property
    def started(self) -> float | None:
        """When it began (started, else created), as Unix seconds."""
        stamp = self.state.started_at or self.state.created_at
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None

    @property
    def ref(self) -> AttemptRef:
        return AttemptRef(self.number, self.started, self.current, self.log_dir.parent)


def _read(path: Path) -> RunState:
    try:
        return state_adapter().validate_json(path.read_bytes())
    except ValueError as error:
        raise InvalidInput(
            f"{path} is not a valid run state: {error}",
            hint="it is written by Kura's supervisor; restore it from a backup or delete the run",
        ) from None


def run_attempts(run_dir: Path) -> list[Attempt]:
    """Every attempt of the run, oldest first; empty when it was never launched."""
    run_dir = Path(run_dir)
    current = _read(state_path(run_dir)) if state_path(run_dir).exists() else None
    attempts: dict[int, Attempt] = {}
    folder = run_dir / "attempts"
    if folder.is_dir():
        for path in folder.glob("*.json"):
            if not path.stem.isdigit():
                continue
            number = int(path.stem)
            attempts[number] = Attempt(number, _read(path), folder / str(number) / "logs", False)
    if current is not None:
        attempts[current.attempt] = Attempt(current.attempt, current, run_dir / "logs", True)
    return [attempts[number] for number in sorted(attempts)]


def attempt_refs(attempts: list[Attempt]) -> tuple[AttemptRef, ...]:
    return tuple(attempt.ref for attempt in attempts)


@dataclass(frozen=True)
class JobAttempt:
    """One start of a cloud job's script: the first, or one after SkyPilot recovered it."""

    number: int
    started_at: str
    resumed_from: str | None
    """The saved trainer state it continued from (as the job saw the path); None: from the
    start (the first attempt, or a recovery before the trainer saved any state)."""


def job_attempts(run_dir: Path) -> tuple[JobAttempt, ...]:
    """The collected ``logs/kura-attempts.tsv`` of a cloud run, oldest first; empty before
    it was collected (or for a local run)."""
    path = Path(run_dir) / "logs" / JOB_ATTEMPTS
    if not path.is_file():
        return ()
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 3 or not fields[0].isdigit():
            raise InvalidInput(
                f"{path} line {number} is not `attempt<TAB>start<TAB>state`: {line[:120]!r}",
                hint="the job writes it; collect the run again (`kura run collect`)",
                path=path,
            )
        found.append(JobAttempt(int(fields[0]), fields[1], fields[2] or None))
    return tuple(found)
