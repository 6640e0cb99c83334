"""The schema of ``runs/<id>/state.json``: a run's state machine and its steps.

Pydantic dataclasses (strict, unknown keys refused): the supervisor changes them in place
and ``dataclasses.asdict`` gives the document. Written and read only by
:mod:`kura.execution.state`.
"""

from __future__ import annotations

import functools
from dataclasses import field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter
from pydantic.dataclasses import dataclass

from kura.errors import UsageError

__all__ = [
    "ACTIVE",
    "SCHEMA_VERSION",
    "TERMINAL",
    "RunState",
    "RunStatus",
    "StepState",
    "StepStatus",
    "now_iso",
    "state_adapter",
]

_CONFIG = ConfigDict(extra="forbid", strict=True)

RunStatus = Literal["queued", "caching", "training", "succeeded", "failed", "cancelled"]
StepStatus = Literal["pending", "running", "succeeded", "failed", "skipped", "cancelled"]
ACTIVE: frozenset[str] = frozenset({"queued", "caching", "training"})
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
SCHEMA_VERSION = 1
_LEADING_KEYS = ("schema_version", "run_id", "status", "attempt", "executor", "host")

_ALLOWED: dict[str, frozenset[str]] = {
    "queued": frozenset({"caching", "training", "succeeded", "failed", "cancelled"}),
    "caching": frozenset({"caching", "training", "succeeded", "failed", "cancelled"}),
    "training": frozenset({"training", "succeeded", "failed", "cancelled"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}


@dataclass(config=_CONFIG)
class StepState:
    name: str
    log: str
    status: StepStatus = "pending"
    log_offset: int = 0
    pid: int | None = None
    pgid: int | None = None
    container: str | None = None
    exit_code: int | None = None
    started_at: str | None = None
    finished_at: str | None = None


@dataclass(config=_CONFIG)
class RunState:
    run_id: str
    executor: Literal["host", "docker", "skypilot"]
    host: str
    created_at: str
    updated_at: str
    schema_version: int = SCHEMA_VERSION
    status: RunStatus = "queued"
    attempt: int = 1
    supervisor_pid: int | None = None
    supervisor_start: int | None = None
    current_step: str | None = None
    pid: int | None = None
    pgid: int | None = None
    container: str | None = None
    sky_job: str | None = None
    exit_code: int | None = None
    log_path: str | None = None
    pass_env: list[str] = field(default_factory=list)
    started_at: str | None = None
    finished_at: str | None = None
    message: str | None = None
    diagnosis: dict[str, Any] | None = None
    steps: list[StepState] = field(default_factory=list)
    gpu: dict[str, Any] | None = None
    """The GPU this attempt ran on, read on the step's machine (kura.execution.gpuwatch);
    ``gpu_class`` is None when it could not be read, with why in ``source``."""
    gpu_samples: list[dict[str, Any]] = field(default_factory=list)
    """Memory in use during the attempt: ``{t, step, used_gib, process_gib}``, bounded."""

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    def step(self, name: str) -> StepState:
        for record in self.steps:
            if record.name == name:
                return record
        raise KeyError(name)

    def move_to(self, status: RunStatus) -> None:
        """Change status, refusing any move the state machine does not allow."""
        if status not in _ALLOWED[self.status]:
            raise UsageError(
                f"run {self.run_id} cannot go from {self.status} to {status}",
                hint="a finished run never changes; relaunch it to start a new attempt",
            )
        self.status = status
        stamp = now_iso()
        if status in ACTIVE and self.started_at is None and status != "queued":
            self.started_at = stamp
        if status in TERMINAL:
            self.finished_at = stamp


def now_iso() -> str:
    """The current time, ISO 8601 in UTC with a ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@functools.cache
def state_adapter() -> TypeAdapter[RunState]:
    """Validation and JSON Schema of state.json (built once: a run list reads hundreds)."""
    return TypeAdapter(RunState)
