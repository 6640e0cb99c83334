"""The schema of ``sweeps/<id>/plan.json``: the one plan a person reviews for a whole sweep.

``kura sweep plan`` writes it (``kura.sweep.envelope.plan_sweep``), ``kura sweep approve`` binds its
digest, and every worker reads it back (:func:`read_sweep_plan`) for the approved trial count
and budget. A hand edit (a key it does not know, a value of another type) is refused naming
the file, the key and the way back: plan the sweep again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, JsonValue

from kura.schema.machine import MachineFile, read_machine_file
from kura.sweep.space import EarlyStop, Objective

__all__ = [
    "PLAN_JSON",
    "ChoiceAxis",
    "ConfigEstimate",
    "PlanBudget",
    "PlanChanges",
    "PlanEstimate",
    "PlanGpu",
    "RangeAxis",
    "SweepPlan",
    "read_sweep_plan",
]

PLAN_JSON = "plan.json"


class PlanGpu(MachineFile):
    """The GPU class the sweep is estimated and priced on."""

    id: str
    chosen_by: str = Field(description="`--gpu`, run.yaml's execution.gpu_class, or a local GPU")
    usd_per_hour: float | None = Field(description="the catalog's cheapest offer; None: no price")


class ChoiceAxis(MachineFile):
    """An axis over listed values."""

    key: str
    choices: list[JsonValue] = Field(min_length=1)
    source: str


class RangeAxis(MachineFile):
    """An axis over a range of numbers."""

    key: str
    kind: Literal["float", "int"]
    low: int | float
    high: int | float
    log: bool
    step: int | float | None
    source: str


class PlanBudget(MachineFile):
    """The sweep's limits; None: no limit of that kind."""

    hours: float | None
    usd: float | None


class ConfigEstimate(MachineFile):
    """One config estimated: a warm-start trial waiting in the study, or a corner of the
    space (the base run's recipe with one axis at one end)."""

    config: str = Field(description="`key=value` of a corner, or the warm start's source")
    params: dict[str, JsonValue]
    fits: bool = Field(description="fits the GPU without asking first")
    aids: list[str] = Field(description="the memory aids of the fit ladder's rungs")
    peak_gib: float | None
    upper_gib: float | None
    cache_seconds: float | None = Field(description="None: the backend cannot time a step")
    train_seconds: float | None = Field(description="None: the backend cannot time a step")


class PlanEstimate(MachineFile):
    """Time and cost as a band over the configs estimated; None where a time is unknown."""

    per_trial_seconds: list[float] | None = Field(description="[lowest, highest]")
    cache_seconds_once: float | None
    total_hours: list[float] | None = Field(description="[lowest, highest]")
    total_usd: list[float] | None = Field(description="[lowest, highest]; None: no price")
    band: str
    configs: list[ConfigEstimate]


class PlanChanges(MachineFile):
    """What every trial may change from the base run."""

    model_config = ConfigDict(populate_by_name=True)

    axes: list[str]
    fit_ladder_keys: list[str]
    datasets: dict[str, str] = Field(description="base dataset → the carved train dataset")
    validation: dict[str, str] = Field(description="base dataset → the carved validation one")
    execution_gpu_class: str = Field(alias="execution.gpu_class")


class SweepPlan(MachineFile):
    """``sweeps/<id>/plan.json``."""

    kind: Literal["sweep-plan"] = "sweep-plan"
    sweep: str
    base_run: str
    backend: str = Field(description="the backend's title and release")
    gpu: PlanGpu
    axes: list[ChoiceAxis | RangeAxis] = Field(min_length=1)
    objective: Objective
    early_stop: EarlyStop
    trials: int = Field(ge=1, description="the approved trial count")
    budget: PlanBudget
    estimate: PlanEstimate
    changes: PlanChanges
    unchanged: dict[str, JsonValue] = Field(description="the base run's recipe left as it is")
    storage: str = Field(description="the study storage, without any password")


def read_sweep_plan(folder: Path, sweep_id: str) -> SweepPlan:
    """``folder``'s plan.json through its schema; damage names the file and the way back."""
    return read_machine_file(
        SweepPlan, folder / PLAN_JSON, remedy=f"plan it again: `kura sweep plan {sweep_id}`"
    )
