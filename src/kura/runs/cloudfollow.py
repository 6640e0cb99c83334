"""A cloud run followed like a local one: the managed job's state, its recoveries and,
once it ended, its outputs collected.

``kura run status`` (and ``run watch``, and the web run page, which all read
:func:`kura.runs.following.run_status`) call :func:`follow_cloud_job` for a run launched as
a cloud job. It asks the run's executor for the job's state (``sky jobs queue``, at most
every :data:`RECHECK_SECONDS` while the job runs, never again once it ended) and keeps the
answer in ``runs/<id>/cloud-job.json``. When the job has ended (succeeded or failed) the
outputs are collected from the bucket, digest-checked (:func:`kura.runs.collect.
collect_outputs`), once: the record says when; a collect that fails is retried at the next
refresh and its error shown meanwhile. The job's own attempt record (one line per start:
the first, and one per recovery, :func:`kura.execution.attempts.job_attempts`) comes back
with the logs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kura.errors import KuraError
from kura.execution.attempts import JobAttempt, job_attempts
from kura.execution.cloudjob import ENDED, CloudJob
from kura.schema.cloud import CloudJobFile
from kura.schema.state import RunState
from kura.workspace import Workspace

__all__ = ["CLOUD_JOB_FILE", "RECHECK_SECONDS", "CloudStatus", "follow_cloud_job"]

CLOUD_JOB_FILE = "cloud-job.json"
RECHECK_SECONDS = 20.0
"""How old a running job's recorded state may be before SkyPilot is asked again (its
queue is a round trip to its API server; the web page polls every few seconds)."""


@dataclass(frozen=True)
class CloudStatus:
    """A cloud run's job as last read, why it could not be read now (``error``), the job's
    attempts (after collect), and when its outputs were collected."""

    job: CloudJob | None
    attempts: tuple[JobAttempt, ...]
    collected_at: str | None
    error: str | None = None
    collect_error: str | None = None

    @property
    def recoveries(self) -> int:
        """How often SkyPilot restarted the job: its own count, else the attempt record's."""
        counted = self.job.recovery_count if self.job is not None else 0
        return max(counted, len(self.attempts) - 1, 0)

    def to_dict(self) -> dict[str, object]:
        return {
            "job": None if self.job is None else self.job.to_dict(),
            "recoveries": self.recoveries,
            "attempts": [
                {"number": a.number, "started_at": a.started_at, "resumed_from": a.resumed_from}
                for a in self.attempts
            ],
            "collected_at": self.collected_at,
            "error": self.error,
            "collect_error": self.collect_error,
        }


def follow_cloud_job(workspace: Workspace, run_id: str, state: RunState) -> CloudStatus | None:
    """The run's cloud job (None for a run that is none), collected once it ended."""
    from kura.execution.executors import executor_class

    if not state.sky_job:
        return None
    executor = executor_class(state.executor)
    run_dir = workspace.run_dir(run_id)
    record = _read_record(run_dir)
    error = None
    if record is None or _stale(record):
        try:
            job = executor.cloud_job(state)
        except KuraError as failure:
            job, error = None, f"{failure.message} ({failure.hint})"
        if job is not None:
            record = _recorded(job, record)
            _write_record(run_dir, record)
    if record is not None and record.status in ENDED and record.collected_at is None:
        record = _collect(workspace, run_id, record)
        _write_record(run_dir, record)
    return CloudStatus(
        job=None if record is None else _job_of(record),
        attempts=job_attempts(run_dir),
        collected_at=None if record is None else record.collected_at,
        error=error,
        collect_error=None if record is None else record.collect_error,
    )


def _stale(record: CloudJobFile) -> bool:
    if record.status in ENDED:
        return False  # an ended job's state is final
    return time.time() - record.checked_at >= RECHECK_SECONDS


def _collect(workspace: Workspace, run_id: str, record: CloudJobFile) -> CloudJobFile:
    from kura.runs.collect import collect_outputs

    try:
        collect_outputs(workspace, run_id)
    except KuraError as failure:
        return record.model_copy(update={"collect_error": f"{failure.message} ({failure.hint})"})
    stamp = datetime.now(UTC).replace(microsecond=0).isoformat()
    return record.model_copy(update={"collected_at": stamp, "collect_error": None})


def _recorded(job: CloudJob, before: CloudJobFile | None) -> CloudJobFile:
    same = before is not None and before.job_id == job.job_id
    return CloudJobFile(
        job_name=job.name,
        job_id=job.job_id,
        status=job.status,
        recovery_count=job.recovery_count,
        failure_reason=job.failure_reason,
        checked_at=time.time(),
        collected_at=before.collected_at if same and before is not None else None,
        collect_error=before.collect_error if same and before is not None else None,
    )


def _job_of(record: CloudJobFile) -> CloudJob:
    return CloudJob(
        record.job_name, record.job_id, record.status, record.recovery_count,
        record.failure_reason,
    )  # fmt: skip


def _read_record(run_dir: Path) -> CloudJobFile | None:
    from kura.schema.machine import read_machine_file

    path = run_dir / CLOUD_JOB_FILE
    if not path.is_file():
        return None
    return read_machine_file(
        CloudJobFile, path, remedy=f"delete {path}: `kura run status` asks SkyPilot again"
    )


def _write_record(run_dir: Path, record: CloudJobFile) -> None:
    from kura.schema.machine import write_machine_file

    write_machine_file(run_dir / CLOUD_JOB_FILE, record)
