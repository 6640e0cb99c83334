"""A run's attempts, read from its state files: the current one and the archived ones.

A relaunch or resume archives the finished attempt's state as ``runs/<id>/attempts/<n>.json``
and moves its step logs to ``runs/<id>/attempts/<n>/logs/`` (a relaunch its ``output/`` to
``attempts/<n>/output/`` too); the current attempt is ``state.json`` with its logs in
``logs/``. Each attempt's :class:`~kura.backends.base.AttemptRef` is what a backend's
``loss_history`` credits the trainer's files to. Only reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kura.backends.base import AttemptRef
from kura.errors import InvalidInput
from kura.execution.state import state_path
from kura.spec.state import RunState, state_adapter

__all__ = ["Attempt", "attempt_refs", "run_attempts"]


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
