"""A sweep plan's time: an unknown step time is shown as unknown, never as 0 s (issue 29)."""

from __future__ import annotations

from kura.backends.base import StepCost
from kura.sweep.envelope import _known_seconds, _render, _seconds_band


def _cost(kind: str, seconds: float | None) -> StepCost:
    return StepCost(kind, kind, 1.0, 1.2, None, seconds, True, "test")  # type: ignore[arg-type]


def test_a_training_step_without_a_time_makes_the_trial_time_unknown() -> None:
    costs = (_cost("cache", 30.0), _cost("train", None))
    assert _known_seconds(costs, ("train", "sample")) is None
    assert _known_seconds(costs, ("cache",)) == 30.0


def test_known_times_add_up_and_band_over_the_configs() -> None:
    costs = (_cost("train", 100.0), _cost("sample", 20.0))
    assert _known_seconds(costs, ("train", "sample")) == 120.0
    assert _seconds_band([120.0, 90.0]) == (90.0, 120.0)
    assert _seconds_band([120.0, None]) is None


def test_the_plan_says_unknown_instead_of_zero_seconds() -> None:
    plan = {
        "sweep": "s1",
        "base_run": "r1",
        "backend": "KohakuMoss",
        "trials": 4,
        "gpu": {"id": "h100-pcie", "chosen_by": "you"},
        "objective": {"metric": "heldout_loss", "judge": None},
        "estimate": {
            "per_trial_seconds": None,
            "cache_seconds_once": None,
            "total_hours": None,
            "total_usd": None,
            "configs": [
                {
                    "config": "base",
                    "fits": True,
                    "peak_gib": 3.0,
                    "upper_gib": 4.0,
                    "train_seconds": None,
                }
            ],
        },
        "budget": {"hours": None, "usd": None},
        "axes": [],
        "changes": {"fit_ladder_keys": []},
        "unchanged": {},
    }
    text = _render(plan)
    assert "0.0 s" not in text and "0.0–0.0" not in text
    assert "per trial: unknown" in text
    assert "base: fits, peak 3.0 GiB (≤ 4.0), unknown" in text


def test_a_tiny_but_known_time_is_not_rounded_to_zero() -> None:
    from kura.sweep.envelope import _rounded

    assert _rounded(12.34) == 12.3
    assert _rounded(0.00042) == 0.00042
    assert _rounded(0.0) == 0.0
