"""AI-Toolkit's loss history: ``loss_log.db``, credited to the run's attempts.

``toolkit/logging_aitk.py::UILogger`` (on with ``logging.use_ui_logger``, which Kura sets
with ``log_every: 1``) writes ``<training_folder>/<name>/loss_log.db``, i.e.
``<run>/output/loss_log.db``: ``steps(step INTEGER PRIMARY KEY, wall_time REAL NOT NULL)``
and ``metrics(step, key, value_real, value_text)``, one row per step and key (every step but
an attempt's first, by 0-based index: seen in a real run). ``loss/loss``
is the raw training loss (the UI's curve), ``learning_rate`` the learning rate; NaN lands as
NULL in ``value_real``. A resumed run keeps the rows up to its checkpoint and deletes the
later ones on its first commit, so one file may hold several attempts' rows: each row is
credited by its wall time. A relaunch moves ``output/`` (the file with it) to
``attempts/<n>/output/``. The file is opened read-only (the trainer may be writing it).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kura.backends.base import AttemptLoss, AttemptRef, LossHistory, LossPoint, attempt_at

__all__ = [
    "LOSS_DB",
    "LOSS_KEY",
    "LR_KEY",
    "MetricRow",
    "connect_read_only",
    "loss_history",
    "open_loss_log",
    "read_metrics",
]

LOSS_DB = "loss_log.db"
LOSS_KEY = "loss/loss"
LR_KEY = "learning_rate"


@dataclass(frozen=True)
class MetricRow:
    step: int
    wall_time: float
    key: str
    value: float
    """NaN where the trainer stored NULL (a non-finite value)."""


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection that writes nothing beside the file. While the trainer writes
    (its ``-wal`` file is there) the file is read through the log it keeps; once the trainer
    closed it (no ``-wal``), it is opened as immutable: a plain read-only open of a WAL-mode
    file would leave new ``-wal``/``-shm`` files in the run folder."""
    live = path.with_name(path.name + "-wal").exists()
    options = "mode=ro" if live else "mode=ro&immutable=1"
    return sqlite3.connect(f"{path.resolve().as_uri()}?{options}", uri=True, timeout=1.0)


def open_loss_log(path: Path) -> sqlite3.Connection | None:
    """:func:`connect_read_only` of a ``loss_log.db`` that is there, else None (absent, or
    not a database yet)."""
    if not path.is_file():
        return None
    try:
        return connect_read_only(path)
    except sqlite3.Error:
        return None


def read_metrics(path: Path) -> list[MetricRow]:
    """Every numeric metric row of one ``loss_log.db``, by step ([] when absent or not
    readable yet: the trainer creates its tables at its first log)."""
    con = open_loss_log(path)
    if con is None:
        return []
    try:
        rows = con.execute(
            "SELECT m.step, s.wall_time, m.key, m.value_real FROM metrics m "
            "JOIN steps s ON s.step = m.step WHERE m.value_text IS NULL ORDER BY m.step"
        ).fetchall()
    except sqlite3.Error:
        return []
    finally:
        con.close()
    return [
        MetricRow(int(step), float(wall), str(key), math.nan if value is None else float(value))
        for step, wall, key, value in rows
    ]


def _files(run_dir: Path, attempts: Sequence[AttemptRef]) -> list[tuple[Path, AttemptRef | None]]:
    found: list[tuple[Path, AttemptRef | None]] = [(run_dir / "output" / LOSS_DB, None)]
    for attempt in attempts:
        if not attempt.current:
            found.append((attempt.folder / "output" / LOSS_DB, attempt))
    return [(path, owner) for path, owner in found if path.is_file()]


def loss_history(run_dir: Path, attempts: Sequence[AttemptRef]) -> LossHistory:
    points: dict[int, list[LossPoint]] = {}
    series: dict[int, dict[str, list[tuple[int, float]]]] = {}
    sources: dict[int, list[Path]] = {}
    for path, folder_owner in _files(Path(run_dir), attempts):
        for row in read_metrics(path):
            owner = attempt_at(attempts, row.wall_time, folder_owner)
            if owner is None:
                continue
            if path not in sources.setdefault(owner.number, []):
                sources[owner.number].append(path)
            if row.key == LOSS_KEY:
                points.setdefault(owner.number, []).append(
                    LossPoint(row.step, row.value, row.wall_time)
                )
            else:
                series.setdefault(owner.number, {}).setdefault(row.key, []).append(
                    (row.step, row.value)
                )
    found = []
    for number in sorted(set(points) | set(series)):
        keys = {key: tuple(sorted(rows)) for key, rows in sorted(series.get(number, {}).items())}
        found.append(
            AttemptLoss(
                attempt=number,
                points=tuple(sorted(points.get(number, []), key=lambda p: p.step)),
                learning_rates={k: v for k, v in keys.items() if k == LR_KEY},
                others={k: v for k, v in keys.items() if k != LR_KEY},
                sources=tuple(sources[number]),
            )
        )
    return LossHistory(
        metric=LOSS_KEY,
        source=f"output/{LOSS_DB} (AI-Toolkit's UILogger)",
        attempts=tuple(found),
    )
