"""Follow a KohakuMoss run from the files it writes: ``metrics.jsonl`` and ``log.txt``.

``metrics.jsonl`` has one JSON object per logged step (every METRICS_EVERY steps, plus the
first and the last) with ``step, time, loss, grad_norm, lr, step_time, samples_per_s,
tokens_per_s …``. ``log.txt`` carries ``training from step A to B``, ``resuming from
<dir>`` and ``exported <path>`` lines. The ETA exists only in KohakuMoss's tqdm bar (shown
on a TTY, which Kura never gives it), so Kura computes it: the median ``step_time`` of the
recent rows × the steps left.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MetricsRow",
    "MossProgress",
    "last_checkpoint",
    "read_metrics",
    "read_progress",
]

_RANGE = re.compile(r"training from step (\d+) to (\d+)")
_RESUMED = re.compile(r"resuming from (\S+)")
_EXPORTED = re.compile(r"\] exported (\S+)")
_CHECKPOINT = re.compile(r"^step_(\d{8})$")


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
    )
