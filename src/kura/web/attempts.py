"""A run's attempts as the run page shows them: each attempt's state, log and loss series.

The attempts are :func:`kura.execution.attempts.run_attempts`'s; each attempt's loss comes
from the run's backend (``loss_history``: TensorBoard for Musubi, ``loss_log.db`` for
AI-Toolkit, ``metrics.jsonl`` for KohakuMoss), which credits the trainer's files to the
attempts. Only reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kura.backends.base import Backend, LossHistory
from kura.execution.attempts import Attempt, attempt_refs, run_attempts
from kura.execution.logs import read_log_tail

__all__ = [
    "Attempt",
    "AttemptLog",
    "attempt_logs",
    "attempt_losses",
    "run_attempts",
]


@dataclass(frozen=True)
class AttemptLog:
    """The tail of one attempt's step log, as the log box shows it."""

    number: int
    status: str
    current: bool
    path: str
    text: str


def attempt_losses(backend: Backend, run_dir: Path, attempts: list[Attempt]) -> LossHistory:
    """Each attempt's loss as the run's backend reads it from the trainer's files."""
    return backend.loss_history(Path(run_dir), attempt_refs(attempts))


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
