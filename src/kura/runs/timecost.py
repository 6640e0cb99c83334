"""How long a run takes and what it costs: every step counted, with a band.

The backend sizes each step (``estimate.steps[].seconds``: caching, training, sampling);
the training step time may be recalibrated by past runs (``estimate.total_hours``). Each
step carries its own band: the backend's ``seconds_band`` where it gives one (Musubi's
caching steps: ±60 %, derived and never measured), else ±``TIME_BAND``: twice the
estimator's median step-time error on its calibration points (about 15 %,
``bench/estimator_accuracy.py``), wide on purpose, because step time is the estimate's
least certain part. The run's band is the sum of the steps' bands (the errors are not
assumed to cancel). A step the backend cannot time is named, never counted as zero.
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
    bands: dict[str, float] | None = None
    """Step name → ± fraction of its hours."""

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
            "band": f"±{TIME_BAND:.0%} (twice the estimator's median step-time error) unless "
            "a step gives its own (band_by_step)",
            "band_by_step": {k: round(v, 2) for k, v in (self.bands or {}).items()},
        }


def time_and_cost(estimate: dict[str, Any], usd_per_hour: float | None) -> TimeCost:
    """Every step's hours (training at the possibly recalibrated total), summed, banded."""
    by_step: dict[str, float] = {}
    bands: dict[str, float] = {}
    untimed: list[str] = []
    for step in estimate.get("steps") or []:
        if step["kind"] == "train" and estimate.get("total_hours") is not None:
            by_step[step["step"]] = float(estimate["total_hours"])
        elif step.get("seconds") is not None:
            by_step[step["step"]] = float(step["seconds"]) / 3600
        else:
            untimed.append(step["step"])
            continue
        band = step.get("seconds_band")
        bands[step["step"]] = TIME_BAND if band is None else float(band)
    if not by_step:
        return TimeCost(None, None, None, None, None, None, {}, tuple(untimed), {})
    hours = sum(by_step.values())
    spread = sum(value * bands[name] for name, value in by_step.items())
    low, high = max(0.0, hours - spread), hours + spread
    price = usd_per_hour

    def usd(value: float) -> float | None:
        return None if price is None else value * price

    return TimeCost(
        hours, low, high, usd(hours), usd(low), usd(high), by_step, tuple(untimed), bands
    )
