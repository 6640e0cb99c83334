"""Musubi's loss history: the TensorBoard scalars it logs, credited to the run's attempts.

Musubi logs through Accelerate's TensorBoard tracker into ``<run>/logs/<prefix><time>/``
(``--logging_dir``; a new timestamped folder and event file per process): ``loss/current``
is the raw step loss, ``loss/average`` its running mean, ``lr/<group>`` the learning rates.
A relaunch moves only the step logs (``*.log``) to ``attempts/<n>/logs/``, so the event
folders stay under ``logs/``; each file belongs to the attempt that was running when
Musubi opened it (the Unix time in its name, ``events.out.tfevents.<seconds>.<host>…``).
An event file found under an archived attempt's folder is that attempt's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from kura.backends.base import AttemptLoss, AttemptRef, LossHistory, LossPoint, attempt_at
from kura.backends.musubi.tensorboard import scalar_events

__all__ = ["RAW_LOSS_TAG", "loss_history"]

RAW_LOSS_TAG = "loss/current"
LR_PREFIX = "lr/"
_EVENTS = "events.out.tfevents.*"
_OPENED = re.compile(r"^events\.out\.tfevents\.(\d+)")


def _opened(path: Path) -> float:
    match = _OPENED.match(path.name)
    return float(match.group(1)) if match else path.stat().st_mtime


def _files(run_dir: Path, attempts: Sequence[AttemptRef]) -> list[tuple[Path, AttemptRef]]:
    found: list[tuple[Path, AttemptRef]] = []
    for attempt in attempts:
        if not attempt.current and attempt.folder.is_dir():
            found += [(path, attempt) for path in sorted(attempt.folder.rglob(_EVENTS))]
    logs = run_dir / "logs"
    if logs.is_dir():
        for path in sorted(logs.rglob(_EVENTS)):
            owner = attempt_at(attempts, _opened(path))
            if owner is not None:
                found.append((path, owner))
    return [(path, owner) for path, owner in found if path.is_file()]


def loss_history(run_dir: Path, attempts: Sequence[AttemptRef]) -> LossHistory:
    points: dict[int, list[LossPoint]] = {}
    series: dict[int, dict[str, list[tuple[int, float]]]] = {}
    sources: dict[int, list[Path]] = {}
    for path, owner in _files(Path(run_dir), attempts):
        events = scalar_events(path)
        if not events:
            continue
        sources.setdefault(owner.number, []).append(path)
        for tag, rows in events.items():
            if tag == RAW_LOSS_TAG:
                points.setdefault(owner.number, []).extend(
                    LossPoint(step, value, wall) for step, value, wall in rows
                )
            else:
                series.setdefault(owner.number, {}).setdefault(tag, []).extend(
                    (step, value) for step, value, _ in rows
                )
    found = []
    for number in sorted(set(points) | set(series)):
        tags = {
            tag: tuple(sorted(rows, key=lambda r: r[0]))
            for tag, rows in series.get(number, {}).items()
        }
        found.append(
            AttemptLoss(
                attempt=number,
                points=tuple(sorted(points.get(number, []), key=lambda p: p.step)),
                learning_rates={t: v for t, v in sorted(tags.items()) if t.startswith(LR_PREFIX)},
                others={t: v for t, v in sorted(tags.items()) if not t.startswith(LR_PREFIX)},
                sources=tuple(sources.get(number, ())),
            )
        )
    return LossHistory(
        metric=RAW_LOSS_TAG,
        source="TensorBoard event files under logs/ (--logging_dir)",
        attempts=tuple(found),
    )
