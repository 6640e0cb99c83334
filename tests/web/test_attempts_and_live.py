"""The run page over a relaunched run: one loss line per attempt, the current attempt's log
open, an OOM's next command, GPU memory, the latest samples; and the run list's order."""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kura.backends.base import StepProgress
from kura.execution.state import RunState
from kura.execution.summary import ema
from kura.runs.following import run_status
from kura.runs.results import RunStatus
from kura.web.charts import ema_series, gpu_memory_series
from kura.web.views import display_progress
from tests.execution.tfevents_writer import EventWriter
from tests.web.helpers import client, snapshot
from tests.web.workspace_builder import WebWorkspace, sample_name, write_samples

RELAUNCHED_AT = time.time() + 3600


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture(scope="module")
def relaunched(web: WebWorkspace) -> str:
    """The finished run turned into attempt 2 that ran out of memory, attempt 1 archived
    the way a relaunch leaves it (state in attempts/1.json, logs in attempts/1/logs/)."""
    run_dir = web.workspace.run_dir(web.finished)
    archive = run_dir / "attempts" / "1" / "logs"
    archive.mkdir(parents=True, exist_ok=True)
    shutil.copy(run_dir / "state.json", run_dir / "attempts" / "1.json")
    for path in sorted((run_dir / "logs").glob("*.log")):
        shutil.move(str(path), archive / path.name)
    state = json.loads((run_dir / "state.json").read_text(encoding="utf-8"))
    log = Path(state["log_path"])
    log.write_text("attempt two: loading the model\nCUDA out of memory\n", encoding="utf-8")
    state.update(
        attempt=2,
        status="failed",
        started_at=_iso(RELAUNCHED_AT),
        finished_at=_iso(RELAUNCHED_AT + 120),
        message="the GPU ran out of memory",
        diagnosis={
            "code": "cuda_oom",
            "step": "train",
            "message": "the GPU ran out of memory during a training step (step train)",
            "evidence": "torch.OutOfMemoryError: CUDA out of memory",
            "next": {"blocks_to_swap": 18},
        },
        gpu_samples=[
            {"t": _iso(RELAUNCHED_AT + s), "step": "train", "used_gib": u, "process_gib": p}
            for s, u, p in ((0, 2.0, 1.5), (30, 20.5, 19.0), (60, 23.6, 23.1))
        ],
    )
    (run_dir / "state.json").write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    writer = EventWriter(run_dir / "logs" / "attempt2")
    for step, value in enumerate((0.9, 0.7, 0.8, 0.6), start=1):
        writer.add(step, {"loss/current": value})
    later = writer.path.with_name(
        writer.path.name.replace(writer.path.name.split(".")[3], str(int(RELAUNCHED_AT) + 10), 1)
    )
    writer.path.rename(later)
    return web.finished


def _loss_chart(html: str) -> str:
    match = re.search(r'<div data-chart="loss">(.*?)</div>', html, re.S)
    assert match
    return match.group(1)


def test_the_loss_chart_draws_one_smoothed_line_per_attempt(
    web: WebWorkspace, relaunched: str
) -> None:
    chart = _loss_chart(client(web.workspace).get(f"/runs/{relaunched}").text)
    assert chart.count('<polyline class="series ') == 2
    assert chart.count('<polyline class="raw ') == 2  # the raw loss behind each
    assert "attempt 1 (EMA)" in chart and "attempt 2 (EMA)" in chart


def test_the_log_box_opens_on_the_current_attempt(web: WebWorkspace, relaunched: str) -> None:
    text = client(web.workspace).get(f"/runs/{relaunched}").text
    current = re.search(
        r'<details class="attempt-log" data-attempt="2" open>(.*?)</details>', text, re.S
    )
    earlier = re.search(
        r'<details class="attempt-log" data-attempt="1" >(.*?)</details>', text, re.S
    )
    assert current and earlier
    assert "attempt two: loading the model" in current.group(1)
    assert 'data-field="log"' in current.group(1)
    assert "saving checkpoint" in earlier.group(1)  # attempt 1's archived log
    assert text.index('data-attempt="2"') < text.index('data-attempt="1"')


def test_an_oom_shows_the_command_to_run_and_no_time_left(
    web: WebWorkspace, relaunched: str
) -> None:
    site = client(web.workspace)
    text = site.get(f"/runs/{relaunched}").text
    # This attempt's diagnosis names no key its approval's contingency covers: relaunch
    # would be refused, so the page offers what works (the status's own next).
    (first, *_) = run_status(web.workspace, relaunched).next
    assert first.command == f"kura run logs {relaunched}"
    assert f'<code class="command">{first.command}</code>' in text
    assert "blocks_to_swap 18" in text
    assert '<div data-block="eta" hidden>' in text
    display = site.get(f"/api/runs/{relaunched}/status").json()["display"]
    assert display["live"] is False and display["eta"] == "–"
    assert display["next"][0]["command"] == first.command


def test_gpu_memory_is_charted_from_the_states_readings(web: WebWorkspace, relaunched: str) -> None:
    text = client(web.workspace).get(f"/runs/{relaunched}").text
    match = re.search(r'<div data-chart="gpu">(.*?)</div>', text, re.S)
    assert match and match.group(1).startswith('<svg class="chart"')
    chart = match.group(1)
    assert chart.count('<polyline class="series ') == 2
    assert "GPU in use" in chart and "training process" in chart
    assert "seconds since the first reading" in chart
    assert ">60</text>" in chart  # the last reading, 60 s after the first


def test_reading_the_page_writes_nothing(web: WebWorkspace, relaunched: str) -> None:
    before = snapshot(web.workspace.root)
    site = client(web.workspace)
    site.get(f"/runs/{relaunched}")
    site.get(f"/api/runs/{relaunched}/status")
    site.get("/")
    assert snapshot(web.workspace.root) == before


def test_the_latest_samples_show_as_thumbnails_as_they_arrive(
    web: WebWorkspace, relaunched: str
) -> None:
    site = client(web.workspace)
    text = site.get(f"/runs/{relaunched}").text
    thumbs = re.search(r'<ul class="thumbs">(.*?)</ul>', text, re.S)
    assert thumbs and thumbs.group(1).count("<img ") == 4
    assert f'src="/files/runs/{relaunched}/output/sample/' in thumbs.group(1)
    write_samples(web.workspace, relaunched, epochs=(3, 4, 5))
    doc = site.get(f"/api/runs/{relaunched}/status").json()
    shown = doc["charts"]["samples"]
    assert shown.count("<img ") == 8  # the newest eight of ten
    assert sample_name(relaunched, 5, 1, 7) in shown
    assert sample_name(relaunched, 1, 0, 42) not in shown
    assert shown.index(sample_name(relaunched, 4, 0, 42)) < shown.index(
        sample_name(relaunched, 5, 0, 42)
    )


def test_a_run_never_launched_shows_no_progress_bar(web: WebWorkspace) -> None:
    text = client(web.workspace).get(f"/runs/{web.drafted}").text
    assert "<progress" not in text
    assert '<div data-block="eta" hidden>' in text
    assert f'<code class="command">kura run plan {web.drafted}</code>' in text  # drafted
    assert "No samples yet." in text and "No GPU memory readings yet." in text


def test_time_left_shows_while_the_run_is_live() -> None:
    now = _iso(time.time())
    state = RunState("r", "host", "localhost", now, now, status="training")
    status = RunStatus("r", state, StepProgress(step=5, total=10, eta_seconds=125), None)
    shown = display_progress(status)
    assert shown["live"] is True and shown["eta"] == "2 min 05 s"
    done = replace(status, state=RunState("r", "host", "localhost", now, now, status="succeeded"))
    finished = display_progress(done)
    assert finished["live"] is False and finished["eta"] == "–"


def test_the_run_list_is_newest_first_and_refreshes(web: WebWorkspace) -> None:
    text = client(web.workspace).get("/").text
    assert text.index(f'href="/runs/{web.drafted}"') < text.index(f'href="/runs/{web.finished}"')
    assert 'data-refresh="/"' in text
    assert '<script src="/static/live.js" defer></script>' in text
    assert re.search(r"<script(?![^>]*\ssrc=)[^>]*>", text) is None  # no inline script


def test_the_smoothed_curve_ends_at_the_status_ema() -> None:
    points = [(1, 1.0), (2, 0.5), (3, 0.8), (4, 0.2)]
    smoothed = ema_series(points)
    assert [step for step, _ in smoothed] == [1, 2, 3, 4]
    assert smoothed[-1][1] == pytest.approx(ema(value for _, value in points))
    assert smoothed[0][1] == 1.0 and smoothed[1][1] == pytest.approx(0.95)


def test_gpu_series_skip_readings_without_a_process_figure() -> None:
    samples: list[dict[str, object]] = [
        {"t": "2026-12-01T10:00:00.000000Z", "step": "train", "used_gib": 4.0, "process_gib": None},
        {"t": "2026-12-01T10:00:10.000000Z", "step": "train", "used_gib": 6.0, "process_gib": 5.0},
    ]
    series = gpu_memory_series(samples)
    assert series["GPU in use"] == [(0, 4.0), (10, 6.0)]
    assert series["training process"] == [(10, 5.0)]
