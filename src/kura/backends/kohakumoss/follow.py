"""Follow a KohakuMoss run from the files it writes: ``metrics.jsonl`` and ``log.txt``.

``metrics.jsonl`` has one JSON object per logged step (every METRICS_EVERY steps, plus the
first and the last) with ``step, time, loss, grad_norm, lr, step_time, samples_per_s,
tokens_per_s …`` (``logging/sinks.py ConsoleLogger.log``: ``{"step", "time", **metrics}``);
a row logged at or after a validation also holds ``val_loss`` (the mean over sigmas) and
``val_loss@<σ>`` (``callbacks/evaluate.py Validation.evaluate``; ``LogMetrics`` adds the
step's ``state.metrics`` to its row and clears them). ``log.txt`` carries ``training from
step A to B``, ``resuming from <dir>`` and ``exported <path>`` lines. The ETA exists only
in KohakuMoss's tqdm bar (shown on a TTY, which Kura never gives it), so Kura computes it:
the median ``step_time`` of the recent rows × the steps left.

The loss history (``loss_history``) credits every row to the attempt that was running at its
``time``: a resumed run keeps the rows up to its checkpoint and appends (``logging/sinks.py
ConsoleLogger.resume_at``), and the rows an earlier attempt logged past that checkpoint move
to ``metrics.<n>.jsonl`` beside it, still that attempt's; a relaunch moves ``output/`` to
``attempts/<n>/output/``.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kura.backends.base import AttemptLoss, AttemptRef, LossHistory, LossPoint, attempt_at

__all__ = [
    "MetricsRow",
    "MossProgress",
    "last_checkpoint",
    "loss_history",
    "read_metrics",
    "read_progress",
]

_RANGE = re.compile(r"training from step (\d+) to (\d+)")
_RESUMED = re.compile(r"resuming from (\S+)")
_EXPORTED = re.compile(r"\] exported (\S+)")
_CHECKPOINT = re.compile(r"^step_(\d{8})$")
_SIDE_FILE = re.compile(r"^metrics\.\d+\.jsonl$")
METRICS = "metrics.jsonl"
VAL_LOSS = "val_loss"
"""The validation loss key (``val_loss@<σ>`` are its per-sigma parts)."""


@dataclass(frozen=True)
class MetricsRow:
    step: int
    time: float
    loss: float
    lr: float
    grad_norm: float | None
    step_time: float | None
    samples_per_s: float | None
    tokens_per_s: float | None
    validation: tuple[tuple[str, float], ...] = ()
    """``val_loss`` and ``val_loss@<σ>`` of this row (key order as written)."""

    @property
    def val_loss(self) -> float | None:
        return next((v for k, v in self.validation if k == VAL_LOSS), None)


@dataclass(frozen=True)
class MossProgress:
    """The latest known progress; None until the files show it."""

    step: int | None
    total: int | None
    loss: float | None
    lr: float | None
    seconds_per_step: float | None
    eta_seconds: int | None
    resumed_from: str | None
    last_checkpoint: str | None
    exported: tuple[str, ...]
    rows: int
    validation_loss: float | None = None
    """The newest ``val_loss`` (KohakuMoss's held-out loss), None before the first."""
    validation_step: int | None = None


def _num(raw: dict[str, object], key: str) -> float | None:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def read_metrics(path: Path) -> tuple[MetricsRow, ...]:
    """Every complete row of ``metrics.jsonl`` (a half-written last line is skipped)."""
    if not path.is_file():
        return ()
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(raw, dict):
            continue
        step, loss, lr = _num(raw, "step"), _num(raw, "loss"), _num(raw, "lr")
        if step is None or loss is None or lr is None:
            continue
        rows.append(
            MetricsRow(
                step=int(step),
                time=_num(raw, "time") or 0.0,
                loss=loss,
                lr=lr,
                grad_norm=_num(raw, "grad_norm"),
                step_time=_num(raw, "step_time"),
                samples_per_s=_num(raw, "samples_per_s"),
                tokens_per_s=_num(raw, "tokens_per_s"),
                validation=tuple(
                    (key, value)
                    for key in raw
                    if key == VAL_LOSS or key.startswith(VAL_LOSS + "@")
                    if (value := _num(raw, key)) is not None
                ),
            )
        )
    return tuple(rows)


def last_checkpoint(output_dir: Path) -> Path | None:
    """The newest ``checkpoints/step_NNNNNNNN`` folder that holds its ``state.json``."""
    folder = output_dir / "checkpoints"
    if not folder.is_dir():
        return None
    found = [
        p for p in folder.iterdir() if _CHECKPOINT.match(p.name) and (p / "state.json").is_file()
    ]
    return max(found, key=lambda p: p.name) if found else None


def read_progress(
    output_dir: Path, total_steps: int | None = None, window: int = 10
) -> MossProgress:
    """Progress of the run folder ``OUTPUT_DIR/RUN_NAME``."""
    rows = read_metrics(output_dir / "metrics.jsonl")
    log = output_dir / "log.txt"
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    total = total_steps
    ranges = _RANGE.findall(text)
    if ranges:
        total = int(ranges[-1][1])
    resumed = _RESUMED.findall(text)
    exported = tuple(dict.fromkeys(_EXPORTED.findall(text)))
    last = rows[-1] if rows else None
    times = [
        r.step_time
        for r in rows[-window:]
        if r.step_time is not None and math.isfinite(r.step_time)
    ]
    per_step = statistics.median(times) if times else None
    eta = None
    if last is not None and total is not None and per_step is not None:
        eta = round(max(0, total - last.step) * per_step)
    checkpoint = last_checkpoint(output_dir)
    scored = next((r for r in reversed(rows) if r.val_loss is not None), None)
    return MossProgress(
        step=last.step if last else None,
        total=total,
        loss=last.loss if last else None,
        lr=last.lr if last else None,
        seconds_per_step=per_step,
        eta_seconds=eta,
        resumed_from=resumed[-1] if resumed else None,
        last_checkpoint=str(checkpoint) if checkpoint else None,
        exported=exported,
        rows=len(rows),
        validation_loss=scored.val_loss if scored else None,
        validation_step=scored.step if scored else None,
    )


def _metrics_files(output_dir: Path) -> list[Path]:
    """``metrics.jsonl`` and the side files a resume moved an attempt's later rows to."""
    if not output_dir.is_dir():
        return []
    side = sorted(p for p in output_dir.iterdir() if _SIDE_FILE.match(p.name))
    return [p for p in (output_dir / METRICS, *side) if p.is_file()]


def loss_history(run_dir: Path, attempts: Sequence[AttemptRef]) -> LossHistory:
    """Each attempt's ``loss`` (raw, per logged step), ``lr``, and in ``others``
    ``grad_norm`` and the held-out ``val_loss`` / ``val_loss@<σ>`` series."""
    run_dir = Path(run_dir)
    folders: list[tuple[Path, AttemptRef | None]] = [(run_dir / "output" / run_dir.name, None)]
    folders += [(a.folder / "output" / run_dir.name, a) for a in attempts if not a.current]
    points: dict[int, list[LossPoint]] = {}
    rates: dict[int, list[tuple[int, float]]] = {}
    norms: dict[int, list[tuple[int, float]]] = {}
    held: dict[int, dict[str, list[tuple[int, float]]]] = {}
    sources: dict[int, list[Path]] = {}
    for folder, folder_owner in folders:
        for path in _metrics_files(folder):
            for row in read_metrics(path):
                when = row.time or None
                owner = attempt_at(attempts, when, folder_owner)
                if owner is None:
                    continue
                number = owner.number
                if path not in sources.setdefault(number, []):
                    sources[number].append(path)
                points.setdefault(number, []).append(LossPoint(row.step, row.loss, when))
                rates.setdefault(number, []).append((row.step, row.lr))
                if row.grad_norm is not None:
                    norms.setdefault(number, []).append((row.step, row.grad_norm))
                for key, value in row.validation:
                    held.setdefault(number, {}).setdefault(key, []).append((row.step, value))
    found = []
    for number in sorted(points):
        others = {"grad_norm": tuple(sorted(norms[number]))} if norms.get(number) else {}
        others.update({k: tuple(sorted(v)) for k, v in held.get(number, {}).items()})
        found.append(
            AttemptLoss(
                attempt=number,
                points=tuple(sorted(points[number], key=lambda p: p.step)),
                learning_rates={"lr": tuple(sorted(rates[number]))},
                others=others,
                sources=tuple(sources[number]),
            )
        )
    return LossHistory(
        metric="loss",
        source=f"output/<run id>/{METRICS} (KohakuMoss's ConsoleLogger)",
        attempts=tuple(found),
    )
