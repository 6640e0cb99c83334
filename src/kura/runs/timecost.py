"""How long a run takes and what it costs: every step counted, with a band.

The backend sizes each step (``estimate.steps[].seconds``: caching, training, sampling);
the training step time may be recalibrated by past runs (``estimate.total_hours``). The
band is ±``TIME_BAND`` around the sum: twice the estimator's median step-time error on its
calibration points (about 15 %, ``bench/estimator_accuracy.py``), wide on purpose, because
step time is the estimate's least certain part. A step the backend cannot time is named,
never counted as zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TIME_BAND", "TimeCost", "time_and_cost"]

TIME_BAND = 0.30


@dataclass(frozen=True)
class TimeCost:
    hours: float | None
    low_hours: float | None
    high_hours: float | None
    usd: float | None
    low_usd: float | None
    high_usd: float | None
    by_step: dict[str, float]
    """Step name → hours."""
    untimed: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        def r(value: float | None, digits: int = 2) -> float | None:
            return None if value is None else round(value, digits)

        return {
            "hours": r(self.hours, 3),
            "hours_band": [r(self.low_hours, 3), r(self.high_hours, 3)],
            "usd": r(self.usd),
            "usd_band": [r(self.low_usd), r(self.high_usd)],
            "by_step_hours": {k: round(v, 3) for k, v in self.by_step.items()},
            "untimed_steps": list(self.untimed),
            "band": f"±{TIME_BAND:.0%} (twice the estimator's median step-time error)",
        }


def time_and_cost(estimate: dict[str, Any], usd_per_hour: float | None) -> TimeCost:
    """Every step's hours (training at the possibly recalibrated total), summed, banded."""
    by_step: dict[str, float] = {}
    untimed: list[str] = []
    for step in estimate.get("steps") or []:
        if step["kind"] == "train" and estimate.get("total_hours") is not None:
            by_step[step["step"]] = float(estimate["total_hours"])
        elif step.get("seconds") is not None:
            by_step[step["step"]] = float(step["seconds"]) / 3600
        else:
            untimed.append(step["step"])
    if not by_step:
        return TimeCost(None, None, None, None, None, None, {}, tuple(untimed))
    hours = sum(by_step.values())
    low, high = hours * (1 - TIME_BAND), hours * (1 + TIME_BAND)
    price = usd_per_hour

    def usd(value: float) -> float | None:
        return None if price is None else value * price

    return TimeCost(hours, low, high, usd(hours), usd(low), usd(high), by_step, tuple(untimed))
