"""The memory gate: a sampled config is planned on the worker's GPU before any launch.

The trial's own plan (``kura run plan`` on the worker's GPU class, the one fit ladder) says
whether it fits. One that does not fit with any choice of the backend's memory aids, or fits
only with a rung that needs a person's yes (a slowdown the sweep's approval does not cover),
is never launched: it is recorded as infeasible with the estimate, and its constraint value
(the estimate's upper edge minus the GPU's usable memory, > 0) teaches the sampler the
feasible region: the worker sets it with ``trial.set_constraint`` (Optuna 5 deprecates the
sampler's ``constraints_func`` for this), and TPE ranks infeasible trials below feasible ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kura.sweep.values import TrialEstimate

__all__ = ["CONSTRAINT_KEY", "MEMORY_CONSTRAINT", "OOM_CONSTRAINT", "Gate", "gate"]

CONSTRAINT_KEY = "kura.constraint"
MEMORY_CONSTRAINT = "memory_gib"
"""Upper edge of the estimate minus the GPU's usable memory: ≤ 0 fits."""
OOM_CONSTRAINT = "out_of_memory"
"""1 when the trainer ran out of memory although the estimate said it fits."""


@dataclass(frozen=True)
class Gate:
    fits: bool
    constraint: float
    reason: str
    estimate: TrialEstimate


def gate(plan: dict[str, Any], usable_gib: float) -> Gate:
    """From a trial's ``kura run plan`` document (``PlanReport.to_dict()``)."""
    steps = plan["estimate"].get("steps", [])
    uppers = [s["upper_gib"] for s in steps if s.get("upper_gib") is not None]
    upper = max(uppers) if uppers else None
    estimate = TrialEstimate(
        gpu=plan["gpu"]["id"],
        usable_gib=usable_gib,
        upper_gib=upper,
        peak_gib=max((s["peak_gib"] or 0.0) for s in steps) if steps else None,
        aids=tuple(r["aid"] for r in plan["fit"].get("rungs", [])),
    )
    margin = (upper - usable_gib) if upper is not None else 0.0
    if plan["ask_first"]:
        return Gate(
            False,
            max(margin, 1e-3),
            "fits only with a memory aid that slows training past the ladder's ask-first "
            "line; the sweep's approval does not cover it",
            estimate,
        )
    if not plan["fits"]:
        return Gate(
            False,
            max(margin, 1e-3),
            f"does not fit {plan['gpu']['id']} even with the fit ladder "
            f"(upper edge {upper} GiB > usable {usable_gib} GiB)",
            estimate,
        )
    return Gate(True, min(margin, 0.0), "fits", estimate)
