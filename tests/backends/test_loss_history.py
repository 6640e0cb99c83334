"""Every backend's ``loss_history``: the trainer's own loss files, each row credited to the
attempt that logged it — across a resume (the files stay and grow) and a relaunch (Kura
moves ``output/`` to ``attempts/<n>/``)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.backends.loss_files import write_attempts, write_loss_log, write_metrics
from tests.execution.tfevents_writer import EventWriter

from kura.backends.base import AttemptRef, LossHistory, attempt_at
from kura.backends.registry import get_backend
from kura.execution.attempts import attempt_refs, run_attempts

RUN = "20261201-0900"
T1, T2, T3 = 1_800_000_000.0, 1_800_001_000.0, 1_800_002_000.0
"""When attempts 1, 2 and 3 started."""
HERE = Path(__file__).parent


def _history(backend: str, run_dir: Path) -> LossHistory:
    return get_backend(backend).loss_history(run_dir, attempt_refs(run_attempts(run_dir)))


def _steps(history: LossHistory) -> dict[int, list[int]]:
    return {a.attempt: [p.step for p in a.points] for a in history.attempts}


def _relaunch(run_dir: Path, attempt: int) -> None:
    """What a relaunch leaves: the earlier attempt's output under ``attempts/<n>/``."""
    target = run_dir / "attempts" / str(attempt)
    target.mkdir(parents=True, exist_ok=True)
    (run_dir / "output").rename(target / "output")


def test_attempt_at_credits_a_time_to_the_attempt_then_running(tmp_path: Path) -> None:
    refs = [AttemptRef(n, t, n == 3, tmp_path) for n, t in ((1, T1), (2, T2), (3, T3))]
    times = (T1 - 50, T1 + 5, T2 - 0.5, T2 + 5, T3 + 9)  # T2 - 0.5: the second's tolerance
    assert [getattr(attempt_at(refs, t), "number", None) for t in times] == [1, 1, 2, 2, 3]
    assert attempt_at(refs, None) is None
    assert attempt_at([], T1) is None


def test_musubi_credits_each_event_file_to_the_attempt_that_opened_it(tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    write_attempts(run_dir, [T1, T2])
    for attempt, opened, losses in ((1, T1 + 5, (0.9, 0.8, 0.7)), (2, T2 + 5, (0.6, 0.5))):
        writer = EventWriter(run_dir / "logs" / f"{RUN}{attempt}" / "network_train")
        for step, loss in enumerate(losses, start=1):
            writer.add(step, {"loss/current": loss, "loss/average": loss, "lr/unet": 1e-4})
        name = writer.path.name.split(".")
        name[3] = str(int(opened))
        writer.path.rename(writer.path.with_name(".".join(name)))
    history = _history("musubi-tuner", run_dir)
    assert history.metric == "loss/current"
    assert _steps(history) == {1: [1, 2, 3], 2: [1, 2]}
    second = history.of(2)
    assert second is not None
    assert [p.loss for p in second.points] == pytest.approx([0.6, 0.5])
    assert all(p.wall_time is not None for p in second.points)  # the events' own times
    assert list(second.learning_rates) == ["lr/unet"] and list(second.others) == ["loss/average"]
    assert [p.parent.parent.name for p in second.sources] == [f"{RUN}2"]


def _aitk_run(run_dir: Path, write: object = write_loss_log) -> None:
    """Attempt 1 logs steps 1-6 and fails; attempt 2 resumes from its step-4 checkpoint
    (the trainer deletes steps 5-6 and logs 5-8); attempt 3 is a relaunch (a fresh
    ``output/``, the first one moved to ``attempts/2/output/``) whose step 3 is NaN."""
    db = run_dir / "output" / "loss_log.db"
    write_attempts(run_dir, [T1, T2, T3])
    write(db, [(s, 1.0 / s, T1 + 10 * s) for s in range(1, 7)])  # type: ignore[operator]
    write(db, [(s, 0.5 / s, T2 + 10 * s) for s in range(5, 9)])  # type: ignore[operator]
    _relaunch(run_dir, 2)
    write(db, [(1, 0.9, T3 + 10), (2, 0.8, T3 + 20), (3, math.nan, T3 + 30)])  # type: ignore[operator]


def _check_aitk(history: LossHistory, run_dir: Path) -> None:
    assert history.metric == "loss/loss"
    assert _steps(history) == {1: [1, 2, 3, 4], 2: [5, 6, 7, 8], 3: [1, 2, 3]}
    first, second, third = history.attempts
    assert [p.loss for p in first.points] == pytest.approx([1.0, 0.5, 1 / 3, 0.25])
    assert second.points[0].loss == pytest.approx(0.1)  # step 5 as attempt 2 logged it
    assert second.points[0].wall_time == pytest.approx(T2 + 50)
    assert math.isnan(third.points[-1].loss)  # stored as NULL: a diverged step, not dropped
    assert list(third.learning_rates) == ["learning_rate"]
    assert third.learning_rates["learning_rate"][0] == (1, pytest.approx(1e-4))
    assert first.sources == second.sources == (run_dir / "attempts/2/output/loss_log.db",)
    assert third.sources == (run_dir / "output" / "loss_log.db",)


def test_ai_toolkit_credits_each_loss_log_row_by_its_wall_time(tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    _aitk_run(run_dir)
    before = sorted(p.name for p in run_dir.rglob("*"))
    _check_aitk(_history("ai-toolkit", run_dir), run_dir)
    assert sorted(p.name for p in run_dir.rglob("*")) == before  # no -wal/-shm left behind


def test_a_loss_log_the_trainer_is_writing_is_read_through_its_log(tmp_path: Path) -> None:
    """While AI-Toolkit holds the file open, committed rows sit in its ``-wal`` file."""
    import sqlite3

    run_dir = tmp_path / RUN
    write_attempts(run_dir, [T1])
    db = run_dir / "output" / "loss_log.db"
    write_loss_log(db, [(1, 0.5, T1 + 1)])
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL;")
    writer.execute("PRAGMA wal_autocheckpoint=0;")
    writer.execute("INSERT INTO steps VALUES (2, ?)", (T1 + 2,))
    writer.execute("INSERT INTO metrics VALUES (2, 'loss/loss', 0.25, NULL)")
    try:
        assert db.with_name("loss_log.db-wal").is_file()
        assert _steps(_history("ai-toolkit", run_dir)) == {1: [1, 2]}
    finally:
        writer.close()


@pytest.mark.skipif(
    not os.environ.get("KURA_AITK_SRC"), reason="set KURA_AITK_SRC to an AI-Toolkit checkout"
)
def test_ai_toolkits_own_logger_writes_what_kura_reads(tmp_path: Path) -> None:
    """The same three attempts written by ``UILogger`` itself (``uilogger_harness.py``
    drives the checkout's class with the rows' wall times)."""

    def trainer(db: Path, rows: list[tuple[int, float, float]]) -> None:
        done = subprocess.run(
            [sys.executable, str(HERE / "aitoolkit" / "uilogger_harness.py"), str(db)],
            input=json.dumps(rows),
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": os.environ["KURA_AITK_SRC"]},
        )
        assert done.returncode == 0, done.stderr[-3000:]

    run_dir = tmp_path / RUN
    _aitk_run(run_dir, trainer)
    _check_aitk(_history("ai-toolkit", run_dir), run_dir)


def test_kohakumoss_credits_metrics_rows_and_the_resume_side_file(tmp_path: Path) -> None:
    """Attempt 1 logs 1-6; attempt 2 resumes at its step-4 checkpoint (KohakuMoss moves rows
    5-6 to ``metrics.1.jsonl``: still attempt 1's loss) and logs 5-8; attempt 3 is a
    relaunch."""
    run_dir = tmp_path / RUN
    out = run_dir / "output" / RUN
    write_attempts(run_dir, [T1, T2, T3])
    write_metrics(out, [(s, 1.0 / s, T1 + 10 * s) for s in range(1, 7)])
    write_metrics(out, [(s, 0.5 / s, T2 + 10 * s) for s in range(5, 9)], resume_at=4)
    assert (out / "metrics.1.jsonl").is_file()
    _relaunch(run_dir, 2)
    write_metrics(out, [(1, 0.9, T3 + 10), (2, 0.8, T3 + 20)])
    history = _history("kohakumoss", run_dir)
    assert history.metric == "loss"
    assert _steps(history) == {1: [1, 2, 3, 4, 5, 6], 2: [5, 6, 7, 8], 3: [1, 2]}
    first = history.of(1)
    assert first is not None
    assert [p.loss for p in first.points][-2:] == pytest.approx([0.2, 1 / 6])
    assert first.learning_rates == {"lr": tuple((s, 2e-4) for s in range(1, 7))}
    assert set(first.others) == {"grad_norm"}
    archived = run_dir / "attempts" / "2" / "output" / RUN
    assert set(first.sources) == {archived / "metrics.jsonl", archived / "metrics.1.jsonl"}


@pytest.mark.parametrize("backend", ["musubi-tuner", "ai-toolkit", "kohakumoss"])
def test_a_run_that_logged_nothing_has_an_empty_history(backend: str, tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    assert _history(backend, run_dir).attempts == ()  # never launched
    write_attempts(run_dir, [T1])
    (run_dir / "output" / RUN).mkdir(parents=True)
    (run_dir / "logs").mkdir()
    assert _history(backend, run_dir).attempts == ()  # launched, nothing logged yet
