"""Executors: where a run's steps execute (this host, a Docker container, a SkyPilot job).

Each executor is one class that knows how a step becomes a process (``command``), how to
stop what outlives a killed client (``remote_stop``) and how to submit a run. Nothing else
branches on an executor's name: callers look the class up here by the name a run records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kura.errors import UsageError
from kura.execution.commands import StepCommand
from kura.execution.executors.base import Executor, Handle
from kura.execution.executors.docker import DockerExecutor
from kura.execution.executors.host import HostExecutor
from kura.execution.executors.skypilot import SkyPilotExecutor
from kura.execution.launch_spec import LaunchRecord, Step
from kura.execution.runs import DEFAULT_GRACE_SECONDS, refresh_state, stop_run
from kura.execution.state import RunState

__all__ = [
    "EXECUTORS",
    "DockerExecutor",
    "Executor",
    "Handle",
    "HostExecutor",
    "SkyPilotExecutor",
    "cancel_run",
    "executor_class",
    "executor_for",
    "step_command",
]

EXECUTORS: dict[str, type[HostExecutor]] = {
    "host": HostExecutor,
    "docker": DockerExecutor,
    "skypilot": SkyPilotExecutor,
}


def executor_class(name: str) -> type[HostExecutor]:
    """The executor class a run names (``execution.executor``)."""
    try:
        return EXECUTORS[name]
    except KeyError:
        raise UsageError(f"unknown executor {name!r}", hint=f"use {', '.join(EXECUTORS)}") from None


def executor_for(name: str, **options: Any) -> Executor:
    """The executor named by a spec's ``executor`` field, built with ``options``.

    docker takes ``user``; skypilot needs ``accelerator`` (the planned GPU class, e.g.
    ``"L40S"``) and takes ``output_bucket`` and ``setup``.
    """
    cls = executor_class(name)
    if cls is SkyPilotExecutor and "accelerator" not in options:
        raise UsageError(
            "a SkyPilot launch needs the planned GPU class",
            hint='pass accelerator=... (e.g. "L40S") from the run\'s plan',
        )
    executor: Executor = cls(**options)
    return executor


def step_command(record: LaunchRecord, step: Step) -> StepCommand:
    """The process for ``step``, as the run's executor starts it."""
    return executor_class(record.spec.executor).command(record, step)


def cancel_run(run_dir: Path, *, grace: float = DEFAULT_GRACE_SECONDS) -> RunState:
    """Stop a run from any process, through the executor its state records
    (:func:`kura.execution.runs.stop_run`); a finished run is returned unchanged."""
    state = refresh_state(run_dir)
    if state.is_terminal:
        return state
    return stop_run(run_dir, grace=grace, remote_stop=executor_class(state.executor).remote_stop)
