"""The trainers' loss files as the trainers write them, and a run's attempts as Kura leaves
them, for the loss-history tests (each backend's ``loss_history`` and the run page's chart).

- ``write_loss_log``: one AI-Toolkit process's ``loss_log.db`` writes, as
  ``toolkit/logging_aitk.py::UILogger`` does them at 27a03a9: WAL mode, the ``steps`` /
  ``metric_keys`` / ``metrics`` tables with the foreign key that cascades, the first
  commit's deletion of every later step (a resumed run), upserts, NaN stored as NULL.
- ``write_metrics``: one KohakuMoss process's ``metrics.jsonl`` rows, as
  ``kohakumoss/logging/sinks.py::ConsoleLogger`` writes them (``resume_at`` moves the rows
  past the resume step to ``metrics.<n>.jsonl``, then rows append with ``step, time``).
- ``write_attempts``: ``state.json`` and ``attempts/<n>.json`` of a finished run.
"""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from kura.execution.state import new_state, write_state
from kura.schema.state import state_adapter

SCHEMA = """
CREATE TABLE IF NOT EXISTS steps (step INTEGER PRIMARY KEY, wall_time REAL NOT NULL);
CREATE TABLE IF NOT EXISTS metric_keys (
    key TEXT PRIMARY KEY, first_seen_step INTEGER, last_seen_step INTEGER);
CREATE TABLE IF NOT EXISTS metrics (
    step INTEGER NOT NULL, key TEXT NOT NULL, value_real REAL, value_text TEXT,
    PRIMARY KEY (step, key), FOREIGN KEY (step) REFERENCES steps(step) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS idx_metrics_key_step ON metrics (key, step);
"""


def write_loss_log(path: Path, rows: list[tuple[int, float, float]], *, lr: float = 1e-4) -> None:
    """One trainer process logging ``(step, loss, wall_time)`` rows (``loss/loss`` and
    ``learning_rate`` each step)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL;")
    con.execute("PRAGMA foreign_keys=ON;")
    con.executescript(SCHEMA)
    for index, (step, loss, wall) in enumerate(rows):
        if index == 0:
            con.execute("DELETE FROM steps WHERE step > ?;", (step,))
        con.execute(
            "INSERT INTO steps(step, wall_time) VALUES(?, ?) "
            "ON CONFLICT(step) DO UPDATE SET wall_time=excluded.wall_time;",
            (step, wall),
        )
        for key, value in (("loss/loss", loss), ("learning_rate", lr)):
            stored = None if not math.isfinite(value) else value
            con.execute(
                "INSERT INTO metrics(step, key, value_real, value_text) VALUES(?, ?, ?, NULL) "
                "ON CONFLICT(step, key) DO UPDATE SET value_real=excluded.value_real;",
                (step, key, stored),
            )
    con.close()


def write_metrics(
    output_dir: Path, rows: list[tuple[int, float, float]], *, resume_at: int | None = None
) -> None:
    """One KohakuMoss process appending ``(step, loss, time)`` rows, after moving the rows
    past ``resume_at`` aside the way a resumed run does."""
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "metrics.jsonl"
    if resume_at is not None and path.exists():
        lines = path.read_text().splitlines(keepends=True)
        later = [line for line in lines if json.loads(line)["step"] > resume_at]
        if later:
            n = 1
            while (side := path.with_name(f"metrics.{n}.jsonl")).exists():
                n += 1
            side.write_text("".join(later))
            path.write_text("".join(line for line in lines if line not in later))
    with path.open("a") as handle:
        for step, loss, when in rows:
            row = {"step": step, "time": when, "loss": loss, "grad_norm": 0.5, "lr": 2e-4}
            handle.write(json.dumps({**row, "step_time": 0.1}) + "\n")


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_attempts(run_dir: Path, starts: list[float], *, step: str = "train") -> None:
    """A finished run of ``len(starts)`` attempts begun at ``starts`` (Unix seconds): the
    earlier ones archived in ``attempts/<n>.json``, the last in ``state.json``."""
    for number, started in enumerate(starts, start=1):
        state = new_state(run_dir.name, run_dir, "host", [step], [], attempt=number)
        state.status = "succeeded" if number == len(starts) else "failed"
        state.started_at, state.finished_at = iso(started), iso(started + 60)
        state.steps[0].status = state.status
        state.current_step, state.log_path = step, state.steps[0].log
        if number < len(starts):
            target = run_dir / "attempts" / f"{number}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(state_adapter().dump_json(state))
        else:
            write_state(run_dir, state)
