"""Read a training step's progress from its log file.

Musubi Tuner 0.3.4 draws a tqdm bar with ``desc="steps"`` on stderr and redraws it with
carriage returns, so one "line" of the log file holds many redraws::

    steps:  12%|█▍         | 120/1000 [02:00<14:40,  1.00s/it, avr_loss=0.0912]

The rate reads ``s/it`` when a step takes over a second, ``it/s`` otherwise (``?it/s``
before the first step). ``avr_loss`` is Musubi's running mean of the per-step loss over the
current epoch window (its ``LossRecorder.moving_average``), not the raw step loss; the raw
loss is only in TensorBoard (``loss/current``). Epochs are announced with a line
``epoch 3/16``. Musubi prints no GPU memory figures.
"""

from __future__ import annotations

import re
from pathlib import Path

from kura.backends.base import StepProgress
from kura.execution.summary import ema

__all__ = ["DEFAULT_TAIL_BYTES", "Progress", "parse_progress", "tail_progress"]

DEFAULT_TAIL_BYTES = 256 * 1024

_BAR = re.compile(
    r"steps:\s*(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)\s*"
    r"\[(?P<elapsed>[\d:]+|\?)<(?P<remaining>[\d:]+|\?),\s*"
    r"(?P<rate>\?|[\d.]+)(?P<unit>s/it|it/s)(?:,\s*(?P<postfix>[^\]]*))?\]"
)
_EPOCH = re.compile(r"^epoch (\d+)/(\d+)\s*$")
_POSTFIX = re.compile(r"([A-Za-z_][\w ]*?)=([^,\]]+)")
_SAVED = re.compile(r"^saving checkpoint: (.+?)\s*$")


Progress = StepProgress
"""Musubi's progress is the seam's :class:`~kura.backends.base.StepProgress`."""


def parse_progress(text: str) -> Progress:
    """Progress from log text (any part of it); the last redraw wins."""
    step = total = epoch = epochs = None
    elapsed = eta = None
    rate: float | None = None
    last_checkpoint: str | None = None
    losses: list[float] = []
    last_step_seen: int | None = None
    for part in re.split(r"[\r\n]", text):
        part = part.strip()
        if not part:
            continue
        epoch_match = _EPOCH.match(part)
        if epoch_match:
            epoch, epochs = int(epoch_match.group(1)), int(epoch_match.group(2))
            continue
        saved = _SAVED.match(part)
        if saved:
            last_checkpoint = saved.group(1)
            continue
        bar = _BAR.search(part)
        if bar is None:
            continue
        step, total = int(bar.group("n")), int(bar.group("total"))
        elapsed = _clock_seconds(bar.group("elapsed"))
        eta = _clock_seconds(bar.group("remaining"))
        rate = _seconds_per_step(bar.group("rate"), bar.group("unit"))
        loss = _postfix_value(bar.group("postfix"), "avr_loss")
        # tqdm redraws the same step several times; count each step's loss once.
        if loss is not None and step != last_step_seen:
            losses.append(loss)
        elif loss is not None and losses:
            losses[-1] = loss
        last_step_seen = step
    return Progress(
        step=step,
        total=total,
        epoch=epoch,
        epochs=epochs,
        loss=losses[-1] if losses else None,
        loss_ema=ema(losses),
        seconds_per_step=rate,
        elapsed_seconds=elapsed,
        eta_seconds=eta,
        last_checkpoint=last_checkpoint,
    )


def tail_progress(log_path: Path, *, max_bytes: int = DEFAULT_TAIL_BYTES) -> Progress:
    """Progress from the last ``max_bytes`` of a log: a constant-cost read of any size log."""
    try:
        with open(log_path, "rb") as handle:
            size = handle.seek(0, 2)
            start = max(0, size - max_bytes)
            handle.seek(start)
            data = handle.read(max_bytes)
    except FileNotFoundError:
        return Progress()
    text = data.decode("utf-8", errors="replace")
    if start > 0:
        # Drop the first, probably partial, segment.
        cut = min((i for i in (text.find("\r"), text.find("\n")) if i >= 0), default=len(text))
        text = text[cut + 1 :]
    return parse_progress(text)


def _clock_seconds(value: str) -> int | None:
    if value == "?":
        return None
    seconds = 0
    for part in value.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


def _seconds_per_step(value: str, unit: str) -> float | None:
    if value == "?":
        return None
    number = float(value)
    if unit == "s/it":
        return number
    return 1.0 / number if number > 0 else None


def _postfix_value(postfix: str | None, key: str) -> float | None:
    if not postfix:
        return None
    for name, raw in _POSTFIX.findall(postfix):
        if name.strip() == key:
            try:
                return float(raw.strip())
            except ValueError:
                return None
    return None
