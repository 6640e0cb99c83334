"""A cloud run's managed job as its engine reports it: ``sky jobs queue -o json``.

The SkyPilot executor asks for the queue (:meth:`SkyPilotExecutor.cloud_job`) and this
module reads SkyPilot's answer: a JSON list of ``ManagedJobRecord`` dumps
(``sky/schemas/api/responses.py``, ``ManagedJobRecord``: ``job_id``, ``job_name``,
``status``, ``recovery_count``, ``failure_reason``; printed by ``sky jobs queue``'s
``--output json``, ``sky/client/cli/command.py``, ``jobs_queue``). A job SkyPilot
recovered more than once holds one record per task; the newest id of the run's job name is
the run's job.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from kura.errors import CheckFailed

__all__ = ["ENDED", "CloudJob", "read_queue"]

ENDED = frozenset(
    {
        "SUCCEEDED",
        "CANCELLED",
        "FAILED",
        "FAILED_SETUP",
        "FAILED_PRECHECKS",
        "FAILED_NO_RESOURCE",
        "FAILED_CONTROLLER",
    }
)
"""SkyPilot's terminal ``ManagedJobStatus`` values (``sky/jobs/state.py``)."""


@dataclass(frozen=True)
class CloudJob:
    """One managed job: its name and id, SkyPilot's status, how often SkyPilot recovered it
    (a preempted VM), and SkyPilot's reason when it failed."""

    name: str
    job_id: int | None
    status: str
    recovery_count: int
    failure_reason: str | None = None

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "ended": self.ended}


def read_queue(text: str, name: str) -> CloudJob | None:
    """The newest job named ``name`` in ``sky jobs queue -o json``'s output (None: SkyPilot
    knows no such job)."""
    try:
        records = json.loads(text)
    except ValueError as error:
        raise CheckFailed(
            f"`sky jobs queue -o json` printed no JSON ({error}): {text[:200]!r}",
            hint="run `sky jobs queue` by hand to see what SkyPilot says",
        ) from None
    if not isinstance(records, list):
        raise CheckFailed(
            "`sky jobs queue -o json` printed no list of jobs",
            hint="run `sky jobs queue` by hand; Kura reads SkyPilot 0.14's output",
        )
    mine = [r for r in records if isinstance(r, dict) and r.get("job_name") == name]
    if not mine:
        return None
    newest = max(mine, key=lambda r: int(r.get("job_id") or 0))
    status = newest.get("status")
    return CloudJob(
        name=name,
        job_id=None if newest.get("job_id") is None else int(newest["job_id"]),
        status=str(status) if status is not None else "UNKNOWN",
        recovery_count=int(newest.get("recovery_count") or 0),
        failure_reason=newest.get("failure_reason") or None,
    )
