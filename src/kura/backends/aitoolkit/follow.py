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
  Wan 2.2 A14B writes each save as two files, ``…_high_noise.safetensors`` and
  ``…_low_noise.safetensors`` (``extensions_built_in/diffusion_models/wan22/
  wan22_14b_model.py:480-493``; read by :func:`kura.export.runfiles.saved_loras`).
  Samples ``output/samples/<ms>__<step:09d>_<i>.<ext>`` (double underscore).
- Resuming, AI-Toolkit loads the newest ``<name>*.safetensors`` by creation time
  (``jobs/process/BaseSDTrainProcess.py:823-854``) and, for Wan 2.2 A14B, both experts'
  files of that save, each only if it exists (``wan22_14b_model.py:495-531``): a save
  missing one expert would restart that expert from nothing, so Kura refuses it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from kura.backends.aitoolkit.losses import LOSS_DB, LOSS_KEY, open_loss_log
from kura.backends.base import OutputLayout, StepProgress
from kura.errors import CheckFailed
from kura.execution.logs import read_log_tail
from kura.export.runfiles import LoraFile, saved_loras

__all__ = [
    "LOSS_KEY",
    "LossRow",
    "lora_checkpoints",
    "outputs",
    "read_loss_log",
    "resume_save",
    "tail_progress",
]

_BAR = re.compile(
    r"(?P<step>\d+)/(?P<total>\d+) \[(?P<elapsed>[\d:]+)<(?P<eta>[\d:?]+),\s*"
    r"(?P<rate>[\d.]+)(?P<unit>s/it|it/s)(?:,\s*(?P<post>[^\]]*))?\]"
)
_LOSS = re.compile(r"\bloss: (?P<loss>[-+\d.eE]+|nan)")
_RESUME = re.compile(r"#### IMPORTANT RESUMING FROM (?P<path>\S+) ####")
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
    checkpoint = _newest_checkpoint(run_dir / "output", run_dir.name)
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


def aitk_loras(output: Path, name: str) -> list[LoraFile]:
    """AI-Toolkit's LoRA files of ``name`` in ``output``: steps in order (the experts of one
    save high-noise first), then the final save."""
    return [f for f in saved_loras(output, name) if f.naming == "ai-toolkit" or f.kind == "final"]


def lora_checkpoints(output: Path, name: str) -> list[tuple[int | None, Path]]:
    """``(step, path)`` of every saved file in step order, then the final save (step
    None); a Wan 2.2 A14B save gives two entries, one per expert."""
    return [(f.number, f.path) for f in aitk_loras(output, name)]


def resume_save(output: Path, name: str) -> tuple[LoraFile, ...]:
    """The save AI-Toolkit will resume from (the newest: the final one, else the last
    step's), every expert's file of it; refused when there is none, or when it lacks an
    expert that earlier saves hold."""
    files = aitk_loras(output, name)
    if not files:
        raise CheckFailed(
            f"run {name} has no AI-Toolkit checkpoint to resume from",
            hint="checkpoints are saved every save_every steps; relaunch to start over",
        )
    saves: dict[tuple[bool, int], list[LoraFile]] = {}
    for found in files:
        saves.setdefault((found.kind == "final", found.number or 0), []).append(found)
    newest = saves[max(saves)]
    experts = {f.expert for f in files if f.expert is not None}
    lacking = sorted(experts - {f.expert for f in newest})
    if lacking:
        earlier = [key for key, group in saves.items() if experts <= {f.expert for f in group}]
        label = newest[0].label().split(" (")[0]
        raise CheckFailed(
            f"run {name}'s newest save ({label}) holds no {' or '.join(lacking)} LoRA: "
            "AI-Toolkit would resume with that expert started over",
            hint=(
                f"move {', '.join(f.path.name for f in newest)} out of {output} to resume "
                f"from step {max(earlier)[1]}"
                if earlier
                else "relaunch to start over"
            ),
            path=output,
        )
    return tuple(newest)


def _newest_checkpoint(output: Path, name: str) -> str | None:
    """The newest save's file names (both experts' of a Wan 2.2 A14B save, joined by
    `` + ``)."""
    files = aitk_loras(output, name)
    if not files:
        return None
    newest = max((f.kind == "final", f.number or 0) for f in files)
    return " + ".join(f.path.name for f in files if (f.kind == "final", f.number or 0) == newest)


def outputs(run_dir: Path) -> OutputLayout:
    """Every saved LoRA file (both experts' of a Wan 2.2 A14B save) and the samples."""
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
