"""How a run's status reads for a person: rounded durations, "unknown" for what the trainer
has not shown yet (never ``None``), a diagnosis's remedy in words, counts as a sentence.

``--json`` keeps the raw values; these functions only write the human lines.
"""

from __future__ import annotations

from collections.abc import Mapping

from kura.backends.base import Diagnosis, StepProgress
from kura.runs.results import RunStatus

__all__ = ["counts_text", "duration", "progress_line", "remedy_text", "status_lines"]

UNKNOWN = "unknown"


def duration(seconds: float | None) -> str:
    """``45 s``, ``1 m 12 s``, ``2 h 05 m``; ``unknown`` for None."""
    if seconds is None:
        return UNKNOWN
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} m"
    if minutes:
        return f"{minutes} m {secs:02d} s"
    return f"{secs} s"


def _of(done: int | None, total: int | None) -> str:
    if done is None:
        return UNKNOWN
    return f"{done}/{total}" if total else str(done)


def _loss(value: float | None) -> str:
    return UNKNOWN if value is None else f"{value:.4f}"


def _speed(seconds_per_step: float | None) -> str:
    return f"{UNKNOWN if seconds_per_step is None else f'{seconds_per_step:.2f}'} s/step"


def progress_line(progress: StepProgress, *, live: bool) -> str:
    """``step 120/2000, epoch 1/4, loss 0.1097 (EMA), 1.52 s/step, ETA 47 m 38 s``: each
    part ``unknown`` until the trainer shows it; the ETA only while the run is live."""
    parts = [
        f"step {_of(progress.step, progress.total)}",
        f"epoch {_of(progress.epoch, progress.epochs)}",
        f"loss {_loss(progress.loss_ema)} (EMA)",
        _speed(progress.seconds_per_step),
    ]
    if live:
        parts.append(f"ETA {duration(progress.eta_seconds)}")
    elif progress.elapsed_seconds is not None:
        parts.append(f"took {duration(progress.elapsed_seconds)}")
    return ", ".join(parts)


def remedy_text(remedy: Mapping[str, object]) -> str:
    """A diagnosis's ``next`` in words: ``increase blocks_to_swap from 8 to 16``,
    ``enable fp8_base``, ``read_log (step train)``."""
    rest = {k: v for k, v in remedy.items() if v is not None}
    words = [str(rest.pop("action", "")), str(rest.pop("key", ""))]
    if "from" in rest and "to" in rest:
        words += [f"from {rest.pop('from')}", f"to {rest.pop('to')}"]
    text = " ".join(word for word in words if word)
    extra = ", ".join(f"{key} {value}" for key, value in rest.items())
    if text and extra:
        return f"{text} ({extra})"
    return text or extra


def counts_text(counts: Mapping[str, int]) -> str:
    """``3 complete · 1 pruned``; ``none yet`` when empty."""
    shown = [f"{count} {status}" for status, count in counts.items() if count]
    return " · ".join(shown) if shown else "none yet"


def status_lines(status: RunStatus) -> list[str]:
    """The human lines of ``kura run status`` (Rich markup; values escaped by the caller's
    console where they come from files)."""
    state = status.state
    if state is None:
        return [f"Run {status.run} has not been launched"]
    step = f" ({state.current_step})" if state.current_step else ""
    lines = [f"Run {status.run}: {state.status}{step}, attempt {state.attempt}"]
    if state.message:
        lines.append(state.message)
    progress = status.progress
    if progress is not None and (progress.step is not None or progress.total):
        lines.append(progress_line(progress, live=not state.is_terminal))
        if status.labels is not None:
            lines.append(
                f"{status.labels.loss}: {_loss(progress.loss)}; the EMA is of {status.labels.raw}"
            )
    diagnosis = status.diagnosis
    if diagnosis is not None:
        lines += _diagnosis_lines(diagnosis)
    return lines


def _diagnosis_lines(diagnosis: Diagnosis) -> list[str]:
    lines = [f"{diagnosis.code}: {diagnosis.message}"]
    if diagnosis.evidence:
        lines.append(f"  log: {diagnosis.evidence}")
    remedy = remedy_text(diagnosis.next)
    if remedy:
        lines.append(f"  remedy: {remedy}")
    return lines
