"""Following an AI-Toolkit run: its progress bar, ``loss_log.db``, samples and LoRA files.

- Progress: a tqdm bar redrawn with ``\\r`` (``toolkit/progress_bar.py``), e.g.
  ``<name>:  12%|…| 240/2000 [05:12<38:10,  1.30s/it, lr: 1.0e-04 loss: 4.123e-01]``; the
  step log is a file (never a pipe) and only its tail is read.
- ``output/loss_log.db`` (``toolkit/logging_aitk.py::UILogger``, SQLite in WAL mode): tables
  ``steps(step, wall_time)`` and ``metrics(step, key, value_real, value_text)``; the loss is
  key ``loss/loss``. Kura sets ``log_every: 1``, so every step has a row but each attempt's
  first (the logging sits inside ``if self.step_num != self.start_step``,
  ``BaseSDTrainProcess.py``); steps are 0-based indices, so a 4-step run logs 1, 2, 3 while
  its bar ends at 4/4. Opened read-only.
- LoRA files ``output/<name>_<step:09d>.safetensors`` and ``output/<name>.safetensors``;
  samples ``output/samples/<ms>__<step:09d>_<i>.<ext>`` (double underscore).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from kura.backends.aitoolkit.losses import LOSS_DB, LOSS_KEY, open_loss_log
from kura.backends.base import OutputLayout, StepProgress
from kura.execution.logs import read_log_tail

__all__ = [
    "LOSS_KEY",
    "LossRow",
    "lora_checkpoints",
    "outputs",
    "read_loss_log",
    "tail_progress",
]

_BAR = re.compile(
    r"(?P<step>\d+)/(?P<total>\d+) \[(?P<elapsed>[\d:]+)<(?P<eta>[\d:?]+),\s*"
    r"(?P<rate>[\d.]+)(?P<unit>s/it|it/s)(?:,\s*(?P<post>[^\]]*))?\]"
)
_LOSS = re.compile(r"\bloss: (?P<loss>[-+\d.eE]+|nan)")
_RESUME = re.compile(r"#### IMPORTANT RESUMING FROM (?P<path>\S+) ####")
_STEP_FILE = re.compile(r"_(\d{9})\.safetensors$")
SAMPLE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".wav", ".mp3")


@dataclass(frozen=True)
class LossRow:
    step: int
    wall_time: float
    loss: float | None


def _seconds(clock: str) -> int | None:
    if "?" in clock:
        return None
    total = 0
    for part in clock.split(":"):
        total = total * 60 + int(part)
    return total


def tail_progress(log_path: Path) -> StepProgress:
    """Progress from the step log's tail, the loss from ``loss_log.db`` when present."""
    text = read_log_tail(log_path, lines=400)
    hits = list(_BAR.finditer(text))
    run_dir = log_path.parent.parent
    losses = read_loss_log(run_dir / "output" / LOSS_DB, limit=200)
    checkpoint = _newest_checkpoint(run_dir / "output")
    if not hits:
        if losses:
            return StepProgress(
                step=losses[-1].step, loss=losses[-1].loss, last_checkpoint=checkpoint
            )
        return StepProgress(last_checkpoint=checkpoint)
    bar = hits[-1]
    rate = float(bar["rate"])
    seconds_per_step = rate if bar["unit"] == "s/it" else (1.0 / rate if rate else None)
    loss: float | None = None
    post = _LOSS.search(bar["post"] or "")
    if post and post["loss"] != "nan":
        loss = float(post["loss"])
    if losses and losses[-1].loss is not None:
        loss = losses[-1].loss
    window = [r.loss for r in losses[-50:] if r.loss is not None]
    return StepProgress(
        step=int(bar["step"]),
        total=int(bar["total"]),
        loss=loss,
        loss_ema=sum(window) / len(window) if window else None,
        seconds_per_step=seconds_per_step,
        elapsed_seconds=_seconds(bar["elapsed"]),
        eta_seconds=_seconds(bar["eta"]),
        last_checkpoint=checkpoint,
    )


def resumed_from(log_text: str) -> str | None:
    """The checkpoint AI-Toolkit said it resumed from, if it did."""
    hits = _RESUME.findall(log_text)
    return hits[-1] if hits else None


def read_loss_log(path: Path, *, limit: int | None = None) -> list[LossRow]:
    """``loss/loss`` per logged step, oldest first (read-only; [] when absent)."""
    con = open_loss_log(path)
    if con is None:
        return []
    try:
        query = (
            "SELECT s.step, s.wall_time, m.value_real FROM steps s LEFT JOIN metrics m "
            "ON m.step = s.step AND m.key = ? ORDER BY s.step DESC"
        )
        params: tuple[object, ...] = (LOSS_KEY,)
        if limit is not None:
            query += " LIMIT ?"
            params += (limit,)
        rows = con.execute(query, params).fetchall()
    except sqlite3.Error:
        return []
    finally:
        con.close()
    return [
        LossRow(int(s), float(w), None if v is None else float(v)) for s, w, v in reversed(rows)
    ]


def lora_checkpoints(output: Path, name: str) -> list[tuple[int | None, Path]]:
    """``(step, path)`` of ``<name>_<step>.safetensors`` in step order, then the final
    ``<name>.safetensors`` (step None)."""
    found: list[tuple[int | None, Path]] = []
    if not output.is_dir():
        return found
    for path in output.glob(f"{name}*.safetensors"):
        rest = path.name[len(name) :]
        match = _STEP_FILE.fullmatch(rest)
        if match:
            found.append((int(match.group(1)), path))
        elif rest == ".safetensors":
            found.append((None, path))
    return sorted(found, key=lambda item: (item[0] is None, item[0] or 0))


def _newest_checkpoint(output: Path) -> str | None:
    files = (
        sorted(output.glob("*.safetensors"), key=lambda p: p.stat().st_mtime)
        if output.is_dir()
        else []
    )
    return files[-1].name if files else None


def outputs(run_dir: Path) -> OutputLayout:
    output = run_dir / "output"
    loras = tuple(path for _, path in lora_checkpoints(output, run_dir.name))
    samples_dir = output / "samples"
    samples = (
        tuple(
            sorted(
                p for p in samples_dir.iterdir() if p.is_file() and p.suffix in SAMPLE_EXTENSIONS
            )
        )
        if samples_dir.is_dir()
        else ()
    )
    return OutputLayout(loras, samples)
