"""Time and cost count every step and carry a band (issue 12, item 10)."""

from __future__ import annotations

import pytest

from kura.runs.timecost import TIME_BAND, time_and_cost

ESTIMATE = {
    "total_hours": 2.0,
    "steps": [
        {"step": "cache_latents", "kind": "cache", "seconds": 360.0},
        {"step": "cache_text_encoder", "kind": "cache", "seconds": 180.0},
        {"step": "train", "kind": "train", "seconds": 6000.0},
        {"step": "sample", "kind": "sample", "seconds": None},
    ],
}


def test_every_timed_step_is_counted_training_at_its_recalibrated_hours() -> None:
    found = time_and_cost(ESTIMATE, usd_per_hour=2.0)
    assert found.by_step == {"cache_latents": 0.1, "cache_text_encoder": 0.05, "train": 2.0}
    assert found.hours == pytest.approx(2.15)
    assert found.usd == pytest.approx(4.3)
    assert found.low_hours == pytest.approx(2.15 * (1 - TIME_BAND))
    assert found.high_usd == pytest.approx(4.3 * (1 + TIME_BAND))
    assert found.untimed == ("sample",)


def test_no_price_no_cost_and_nothing_timed_nothing_claimed() -> None:
    assert time_and_cost(ESTIMATE, usd_per_hour=None).usd is None
    empty = time_and_cost({"steps": [{"step": "train", "kind": "train", "seconds": None}]}, 1.0)
    assert empty.hours is None and empty.untimed == ("train",)


def test_a_step_with_its_own_band_widens_the_run_band_by_its_share() -> None:
    banded = {
        "total_hours": 1.0,
        "steps": [
            {"step": "cache_text_encoder", "kind": "cache", "seconds": 1800.0, "seconds_band": 0.6},
            {"step": "train", "kind": "train", "seconds": 3600.0},
        ],
    }
    found = time_and_cost(banded, usd_per_hour=1.0)
    assert found.hours == pytest.approx(1.5)
    assert found.bands == {"cache_text_encoder": 0.6, "train": TIME_BAND}
    assert found.low_hours == pytest.approx(1.5 - 0.5 * 0.6 - 1.0 * TIME_BAND)
    assert found.high_usd == pytest.approx(1.5 + 0.5 * 0.6 + 1.0 * TIME_BAND)
    assert found.to_dict()["band_by_step"]["cache_text_encoder"] == 0.6
