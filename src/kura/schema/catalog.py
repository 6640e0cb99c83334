"""Every file Kura writes, by the name ``kura schema NAME`` knows it, and its JSON Schema."""

from __future__ import annotations

import importlib
from typing import Any

from kura.errors import UsageError

__all__ = ["SCHEMAS", "json_schema"]

SCHEMAS: dict[str, tuple[str, str]] = {
    "approval": ("kura.schema.approval:ApprovalRecord", "runs/<id>/approval.json"),
    "lock": ("kura.schema.lock:RunLock", "runs/<id>/compiled/run.lock"),
    "plan": ("kura.schema.plan:PlanRecord", "runs/<id>/plan.json"),
    "container": ("kura.schema.compiled:ContainerSpec", "runs/<id>/compiled/container.json"),
    "dataset": ("kura.schema.dataset:DatasetSpec", "datasets/<name>/dataset.yaml"),
    "inspection": ("kura.schema.inspection:InspectionFile", "datasets/<name>/inspection.json"),
    "launch": ("kura.schema.launch:LaunchRecord", "runs/<id>/launch.json"),
    "run": ("kura.schema.run:RunSpec", "runs/<id>/run.yaml"),
    "state": ("kura.schema.state:RunState", "runs/<id>/state.json"),
    "steps": ("kura.schema.compiled:StepsFile", "runs/<id>/compiled/steps.json"),
    "sweep-approval": ("kura.sweep.envelope:SweepApproval", "sweeps/<id>/approval.json"),
    "sweep-plan": ("kura.sweep.plan_file:SweepPlan", "sweeps/<id>/plan.json"),
    "workspace": ("kura.schema.workspace:WorkspaceConfig", "kura.toml"),
}
"""Schema name → (``module:model``, the file it describes)."""


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the file called ``name`` (pydantic models and dataclasses)."""
    from pydantic import TypeAdapter

    entry = SCHEMAS.get(name)
    if entry is None:
        raise UsageError(f"unknown schema {name!r}", hint=f"choose one of {', '.join(SCHEMAS)}")
    module, _, attribute = entry[0].partition(":")
    model = getattr(importlib.import_module(module), attribute)
    schema: dict[str, Any] = TypeAdapter(model).json_schema(by_alias=True)
    schema.setdefault("description", f"The schema of {entry[1]}.")
    return schema
