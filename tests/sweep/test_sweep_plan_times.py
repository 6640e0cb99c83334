"""A sweep's time and cost: an unknown step time or price is shown as unknown, never as 0
(issues 29 and 24: the plan, the plan command's summary, the dollars a worker counts)."""

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
    from kura.sweep.plan_file import SweepPlan

    plan = SweepPlan.model_validate(
        {
            "sweep": "s1",
            "base_run": "r1",
            "backend": "KohakuMoss",
            "trials": 4,
            "gpu": {"id": "h100-pcie", "chosen_by": "you", "usd_per_hour": None},
            "objective": {"metric": "heldout_loss"},
            "early_stop": {},
            "estimate": {
                "per_trial_seconds": None,
                "cache_seconds_once": None,
                "total_hours": None,
                "total_usd": None,
                "band": "test",
                "configs": [
                    {
                        "config": "base",
                        "params": {},
                        "fits": True,
                        "aids": [],
                        "peak_gib": 3.0,
                        "upper_gib": 4.0,
                        "cache_seconds": None,
                        "train_seconds": None,
                    }
                ],
            },
            "budget": {"hours": None, "usd": None},
            "axes": [{"key": "training.network.rank", "choices": [16, 32], "source": "test"}],
            "changes": {
                "axes": ["training.network.rank"],
                "fit_ladder_keys": [],
                "datasets": {},
                "validation": {},
                "execution.gpu_class": "the worker's GPU",
            },
            "unchanged": {},
            "storage": "journal",
        }
    )
    text = _render(plan)
    assert "0.0 s" not in text and "0.0–0.0" not in text
    assert "per trial: unknown" in text
    assert "base: fits, peak 3.0 GiB (≤ 4.0), unknown" in text


def test_a_tiny_but_known_time_is_not_rounded_to_zero() -> None:
    from kura.sweep.envelope import _rounded

    assert _rounded(12.34) == 12.3
    assert _rounded(0.00042) == 0.00042
    assert _rounded(0.0) == 0.0


def test_the_plan_command_says_unknown_gpu_hours_instead_of_failing() -> None:
    import io

    from rich.console import Console

    from kura.cli.sweep import _render_plan

    out = io.StringIO()
    doc = {"sweep": "s1", "trials": 4, "gpu": {"id": "h100-pcie"}}
    _render_plan(Console(file=out, width=200), {**doc, "estimate": {"total_hours": None}})
    assert "4 trials on h100-pcie, unknown GPU-hours" in out.getvalue()
    out = io.StringIO()
    _render_plan(Console(file=out, width=200), {**doc, "estimate": {"total_hours": [0.5, 1.25]}})
    assert "0.5–1.25 GPU-hours" in out.getvalue()


def _trial(state: str, **attrs: object) -> object:
    from datetime import UTC, datetime, timedelta
    from types import SimpleNamespace

    from optuna.trial import TrialState

    started = datetime.now(UTC) - timedelta(hours=1)
    return SimpleNamespace(state=TrialState[state], datetime_start=started, user_attrs=attrs)


def test_dollars_spent_on_a_gpu_without_a_price_are_unknown_not_zero() -> None:
    from kura.sweep.worker import spent

    priced = _trial("COMPLETE", **{"kura.gpu_hours": 0.5, "kura.usd": 1.25})
    never_ran = _trial("PRUNED", **{"kura.status": "infeasible"})
    hours, usd = spent([priced, never_ran])  # type: ignore[list-item]
    assert (hours, usd) == (0.5, 1.25)
    unpriced = _trial("COMPLETE", **{"kura.gpu_hours": 0.25, "kura.usd": None})
    assert spent([priced, unpriced]) == (0.75, None)  # type: ignore[list-item]
    running = _trial("RUNNING", **{"kura.usd_per_hour": None})
    hours, usd = spent([priced, running])  # type: ignore[list-item]
    assert usd is None and 1.49 < hours < 1.51
