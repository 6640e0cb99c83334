"""The schema of ``runs/<id>/plan.json``: the plan a person reviews, as data.

Written by ``kura run plan`` beside ``plan.md`` (and rewritten by ``relaunch`` to show what
actually ran); read by approve, launch, evidence and the web page. ``plan_id`` binds the two
files: plan.md carries the same id in its first line, and ``plan_md_sha256`` is the digest of
that text, so a ``run plan`` killed between its two writes leaves a pair that approve refuses.
The backend's own documents (``fit``, ``estimate``) stay open mappings: their keys are the
backend's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kura.schema.base import StrictModel
from kura.schema.cloud import SkyPilotLaunch

__all__ = [
    "PLAN_VERSION",
    "ContingencyRecord",
    "PlanCheck",
    "PlanRecipe",
    "PlanRecord",
    "RecipeEntry",
]

PLAN_VERSION: Literal[1] = 1


class PlanCheck(StrictModel):
    check: str
    status: Literal["ok", "failed", "pending", "warning"]
    detail: str
    blocking: bool = False
    files: list[str] = []


class RecipeEntry(StrictModel):
    item: str = Field(description="The part of the recipe (network, optimizer, schedule, …).")
    runs: str = Field(description="What the trainer's compiled configuration runs, in its terms.")
    source: str = Field(description="The compiled file and keys it was read from.")
    values: dict[str, Any] = {}
    intent: str | None = Field(None, description="What run.yaml asks for this part.")
    differs: str | None = Field(None, description="How the trainer departs from run.yaml's intent.")


class PlanRecipe(StrictModel):
    """The recipe read back from the compiled trainer configuration (``Backend.recipe``)."""

    backend: str
    files: list[str]
    items: list[RecipeEntry]
    lora_scale: float | None = None
    total_steps: int | None = None
    differences: list[str] = []


class ContingencyRecord(StrictModel):
    """The rung the plan approves in advance for an out-of-memory (the backend's
    ``Contingency``), in plan.json and, bound by its digest, in approval.json."""

    on: str
    rung: dict[str, Any]
    change: dict[str, Any]


class PlanRecord(StrictModel):
    kind: Literal["run-plan"] = "run-plan"
    version: Literal[1] = PLAN_VERSION
    run: str
    plan_id: str = Field(description="Random id shared with plan.md's first line.")
    plan_md_sha256: str = Field(description="sha256 of plan.md's text.")
    plan_digest: str = Field(description="The same digest as `sha256:…` (kept for readers).")
    compiled_digest: str = Field(description="sha256 over compiled/ when this plan was made.")
    run_yaml_digest: str = Field(
        "",
        description="`sha256:` of the run.yaml text this plan (and its compiled files) was "
        "made from; approve and launch refuse a run.yaml that is no longer it.",
    )
    gpu: dict[str, Any]
    fits: bool
    ask_first: bool
    estimate: dict[str, Any]
    fit: dict[str, Any]
    options: list[dict[str, Any]] = []
    evidence: dict[str, Any]
    applied: dict[str, Any]
    kept: dict[str, Any] = Field(
        {}, description="Settings a person fixed that the fit ladder would have chosen otherwise."
    )
    contingency: ContingencyRecord | None
    regrets: list[dict[str, Any]]
    downloads: dict[str, Any]
    compile: dict[str, Any]
    checks: list[PlanCheck] = []
    cloud: SkyPilotLaunch | None = Field(
        None,
        description="A SkyPilot run's resolved launch settings (accelerator × count, bucket, "
        "cloud, region, spot, disk); launch refuses when they resolve differently now.",
    )
    dataset_files: dict[str, dict[str, str]] = Field(
        {}, description="dataset → file → sha256 as the plan checked them (names what changed)."
    )
    provenance: dict[str, str]
    recipe: PlanRecipe | None = Field(
        None, description="The recipe as the compiled trainer configuration holds it."
    )
    plan: str
    attempts: list[dict[str, Any]] = Field(
        [], description="What each launched attempt actually ran (relaunch appends)."
    )
    next: list[dict[str, str]] = []
