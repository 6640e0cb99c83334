"""A run's attempts as the run page shows them: each attempt's state, log and loss series.

A relaunch archives the finished attempt's state as ``runs/<id>/attempts/<n>.json`` and
moves its step logs to ``runs/<id>/attempts/<n>/logs/``; the current attempt is
``state.json`` with its logs in ``logs/``. TensorBoard event files stay in ``logs/`` (or
the archived folder); each file belongs to the attempt that was running when the trainer
opened it — the Unix time in its name (``events.out.tfevents.<seconds>.<host>…``) against
the attempts' start times. Only reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kura.errors import InvalidInput
from kura.execution.logs import read_log_tail
from kura.execution.state import state_path
from kura.execution.tensorboard import scalars_in_file
from kura.spec.state import RunState, state_adapter

__all__ = [
    "RAW_LOSS_TAG",
    "Attempt",
    "AttemptLog",
    "attempt_logs",
    "attempt_losses",
    "run_attempts",
]

RAW_LOSS_TAG = "loss/current"
"""The raw per-step loss Musubi logs to TensorBoard (``loss/average`` is its own mean)."""

_EVENT_TIME = re.compile(r"^events\.out\.tfevents\.(\d+)")


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


@dataclass(frozen=True)
class AttemptLog:
    """The tail of one attempt's step log, as the log box shows it."""

    number: int
    status: str
    current: bool
    path: str
    text: str


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


def _owner(path: Path, attempts: list[Attempt]) -> Attempt:
    """The attempt that was running when the event file was opened (the first when unknown)."""
    match = _EVENT_TIME.match(path.name)
    opened = int(match.group(1)) if match else path.stat().st_mtime
    owner = attempts[0]
    for attempt in attempts:
        started = attempt.started
        if started is not None and started <= opened + 1:
            owner = attempt
    return owner


def attempt_losses(run_dir: Path, attempts: list[Attempt]) -> dict[int, list[tuple[int, float]]]:
    """The raw loss series of each attempt that logged one, by attempt number."""
    if not attempts:
        return {}
    by_attempt: dict[int, list[tuple[int, float]]] = {}
    archived = {attempt.number: attempt for attempt in attempts if not attempt.current}
    files: list[tuple[Path, int]] = []
    for number in archived:
        folder = Path(run_dir) / "attempts" / str(number)
        if folder.is_dir():
            files += [(path, number) for path in sorted(folder.rglob("events.out.tfevents.*"))]
    logs = Path(run_dir) / "logs"
    if logs.is_dir():
        for path in sorted(logs.rglob("events.out.tfevents.*")):
            files.append((path, _owner(path, attempts).number))
    for path, number in files:
        if not path.is_file():
            continue
        points = scalars_in_file(path).get(RAW_LOSS_TAG, [])
        if points:
            by_attempt.setdefault(number, []).extend(points)
    for points in by_attempt.values():
        points.sort(key=lambda point: point[0])
    return dict(sorted(by_attempt.items()))


def attempt_logs(attempts: list[Attempt], *, lines: int) -> list[AttemptLog]:
    """The log tail of each attempt, the current one first."""
    shown = []
    for attempt in reversed(attempts):
        path = _log_path(attempt)
        text = read_log_tail(path, lines=lines) if path is not None and path.exists() else ""
        shown.append(
            AttemptLog(
                number=attempt.number,
                status=attempt.state.status,
                current=attempt.current,
                path=str(path) if path is not None else "",
                text=text,
            )
        )
    return shown


def _log_path(attempt: Attempt) -> Path | None:
    """The attempt's current (else last) step log, where the archive put it."""
    state = attempt.state
    fallback = state.steps[0 if attempt.current else -1].log if state.steps else None
    named = state.log_path or fallback
    if named is None:
        return None
    if attempt.current:
        return Path(named)
    return attempt.log_dir / Path(named).name
