"""The executor protocol: submit a spec, poll its state, find its log, cancel it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kura.execution.cloudjob import CloudJob
from kura.execution.commands import StepCommand
from kura.execution.launch_spec import LaunchRecord, LaunchSpec, Step
from kura.execution.state import RunState
from kura.execution.supervisors import SupervisorStarter

__all__ = ["Executor", "Handle"]


@dataclass(frozen=True)
class Handle:
    """Enough to find a run again from any process: everything else is in state.json."""

    run_id: str
    run_dir: Path
    executor: str


class Executor(Protocol):
    name: str

    def submit(
        self,
        spec: LaunchSpec,
        *,
        foreground: bool = False,
        backend: str = ...,
        backend_config: dict[str, Any] | None = None,
        supervisors: SupervisorStarter | None = None,
    ) -> Handle: ...

    def poll(self, handle: Handle) -> RunState: ...

    def logs(self, handle: Handle) -> Path: ...

    def cancel(self, handle: Handle, *, grace: float = ...) -> RunState: ...

    @staticmethod
    def command(record: LaunchRecord, step: Step) -> StepCommand:
        """The process that runs ``step`` (argv, folder, environment, container name)."""
        ...

    @staticmethod
    def remote_stop(state: RunState, grace: float) -> list[str] | None:
        """The argv that stops what outlives a killed client (a container, a cloud job)."""
        ...

    @staticmethod
    def cloud_job(state: RunState) -> CloudJob | None:
        """The run's job as its cloud engine reports it (None where there is none)."""
        ...
