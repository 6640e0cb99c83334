"""The schema of ``runs/<id>/approval.json``: the one gate's record.

Written only by ``kura run approve`` (and by ``relaunch`` when it applies the approved
contingency), read only by the launch gate (:mod:`kura.runs.approval`). ``record_digest`` is
the sha256 of the record's own canonical JSON without that field: the contingency, the copy
of run.yaml and an accepted risk are covered, so an edited approval is refused.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kura.schema.base import StrictModel
from kura.schema.cloud import SkyPilotLaunch
from kura.schema.plan import ContingencyRecord

__all__ = [
    "APPROVAL_NAME",
    "APPROVAL_VERSION",
    "AcceptedRisk",
    "ApprovalRecord",
    "ContingencyRecord",
]

APPROVAL_NAME = "approval.json"

APPROVAL_VERSION: Literal[2] = 2


class AcceptedRisk(StrictModel):
    reason: str = Field(min_length=1, description="Why a person launches a plan that does not fit.")
    problems: list[str] = Field(description="What the plan said does not hold.")


class ApprovalRecord(StrictModel):
    kind: Literal["run-approval"] = "run-approval"
    version: Literal[2] = APPROVAL_VERSION
    run: str
    digest: str = Field(description="sha256 over `files`.")
    files: dict[str, str] = Field(
        description="run-folder path → sha256 of compiled/*, plan.md and plan.json."
    )
    plan_id: str = Field(description="The plan approved (plan.json's `plan_id`).")
    approved_at: str
    approved_by: str
    via: str = Field(
        pattern=r"^(plan|contingency|sweep \S+)$",
        description="plan (a person), contingency (relaunch applying the plan's rung), or "
        "sweep <id> (a trial inside an approved sweep's envelope)",
    )
    contingency: ContingencyRecord | None
    accepted_risk: AcceptedRisk | None = None
    run_yaml: dict[str, Any] = Field(description="run.yaml as approved, as data.")
    cloud: SkyPilotLaunch | None = Field(
        None, description="A SkyPilot run's launch settings as approved (plan.json's `cloud`)."
    )
    record_digest: str = Field("", description="sha256 of this record without this field.")
