"""Musubi's sample names, the compare syntax and the server-drawn charts."""

from __future__ import annotations

import math

import pytest

from kura.backends.base import AttemptLoss, LossHistory, LossPoint, StepProgress
from kura.errors import UsageError
from kura.execution.state import RunState
from kura.runs.results import RunStatus
from kura.web.charts import MAX_POINTS, attempt_loss_series, line_chart, lr_series
from kura.web.samples import Point, parse_sample_name, parse_side, prompt_lines, prompt_text
from kura.web.views import display_progress, json_safe


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("run1_e000003_01_20261130101500_42_000.png", (Point("epoch", 3), 1, "42", False)),
        ("run1_e000003_01_20261130101500_000.png", (Point("epoch", 3), 1, None, False)),
        ("my_run_000500_00_20261130101500_7_000.png", (Point("step", 500), 0, "7", False)),
        ("run1_e000002_12_20261130101500_123.mp4", (Point("epoch", 2), 12, "123", True)),
        ("e000001_00_20261130101500_000.png", (Point("epoch", 1), 0, None, False)),
    ],
)
def test_musubi_sample_names_parse(
    name: str, expected: tuple[Point, int, str | None, bool]
) -> None:
    parsed = parse_sample_name(name)
    assert parsed is not None
    point, index, stamp, seed, is_video = parsed
    assert stamp == "20261130101500"
    assert (point, index, None if seed is None else str(seed), is_video) == expected


@pytest.mark.parametrize(
    "name", ["run1.safetensors", "run1_e000003.png", "notes.png", "run1_e3_01_2026_000.png"]
)
def test_other_files_are_not_samples(name: str) -> None:
    assert parse_sample_name(name) is None


def test_prompt_numbering_and_text_follow_musubi() -> None:
    lines = ["# a comment", "", "a cat --w 512 --d 42", "  ", "a dog"]
    assert prompt_lines(lines) == ["a cat --w 512 --d 42", "a dog"]
    assert prompt_text("a cat, double-dash--fine --w 512 --d 42") == "a cat, double-dash--fine"


def test_compare_sides() -> None:
    assert parse_side("run1") == ("run1", None)
    assert parse_side("run1:3") == ("run1", Point("epoch", 3))
    assert parse_side("run1:e3") == ("run1", Point("epoch", 3))
    assert parse_side("run1:s500") == ("run1", Point("step", 500))
    with pytest.raises(UsageError):
        parse_side("run1:latest")
    with pytest.raises(UsageError):
        parse_side("../run1:3")


def test_chart_draws_each_series_and_escapes_names() -> None:
    svg = line_chart(
        {"loss/<current>": [(1, 0.5), (2, 0.4), (3, math.nan)], "b": [(1, 0.45)]},
        title="Loss & friends",
        empty="none",
    )
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<polyline") == 2
    assert "loss/&lt;current&gt;" in svg and "Loss &amp; friends" in svg
    assert "nan" not in svg.lower()


def test_chart_without_points_says_so_and_long_series_are_thinned() -> None:
    assert line_chart({}, title="t", empty="No loss yet.") == '<p class="empty">No loss yet.</p>'
    long = [(step, 1 / step) for step in range(1, 10_001)]
    svg = line_chart({"x": long}, title="t", empty="-")
    points = svg.split('points="')[1].split('"')[0].split()
    assert len(points) <= MAX_POINTS
    assert points[-1].startswith("624.0,")  # the last step stays at the right edge


def test_series_selection() -> None:
    logged = AttemptLoss(
        2,
        (LossPoint(1, 1.0), LossPoint(2, 0.5)),
        learning_rates={"lr/group0": ((1, 1e-4),), "lr/empty": ()},
        others={"loss/epoch": ((1, 1.0),)},
    )
    silent = AttemptLoss(1, (), learning_rates={"lr/group0": ((1, 1e-4),)})
    smoothed, raw = attempt_loss_series(LossHistory("loss/current", "test", (silent, logged)))
    assert list(smoothed) == list(raw) == ["attempt 2 (EMA)"]  # one line per attempt with a loss
    assert raw["attempt 2 (EMA)"] == [(1, 1.0), (2, 0.5)]
    assert smoothed["attempt 2 (EMA)"] == [(1, 1.0), (2, pytest.approx(0.95))]
    assert list(lr_series(logged)) == ["lr/group0"]
    assert lr_series(None) == {}


def test_progress_display_and_json_without_nan() -> None:
    now = "2026-11-30T09:00:00.000000Z"
    state = RunState("r", "host", "localhost", now, now, status="training", current_step="train")
    progress = StepProgress(
        step=120,
        total=1000,
        epoch=2,
        epochs=16,
        loss=math.nan,
        loss_ema=0.09123,
        seconds_per_step=1.0,
        eta_seconds=880,
    )
    status = RunStatus("r", state, progress, None)
    doc = status.to_dict()
    shown = display_progress(status)
    assert shown["step"] == "120 / 1000"
    assert shown["epoch"] == "2 / 16"
    assert shown["loss"] == "nan"
    assert shown["loss_ema"] == "0.0912"
    assert shown["eta"] == "14 min 40 s"
    assert shown["terminal"] is False
    assert json_safe(doc)["progress"]["loss"] == "nan"
    never = RunStatus("r", state=None, progress=None, scalars=None)
    assert display_progress(never)["status"] == "not launched"
