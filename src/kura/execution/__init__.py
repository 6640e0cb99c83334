"""Launch, follow and stop a trainer's runs: executors, run state, logs, diagnosis.

The CLI's entry points::

    launch(spec, foreground=..., backend_config=..., executor=...)  # run launch/relaunch/resume
    refresh_state(run_dir), run_summary(run_dir, progress=..., loss_history=...)  # status
    wait_for_run(run_dir, timeout=...)                              # run watch
    step_log(run_dir, step=None), read_log_tail / read_log_since    # run logs [-f]
    cancel_run(run_dir, grace=...)                                  # run cancel
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kura.execution.executors import (
        DockerExecutor,
        Executor,
        Handle,
        HostExecutor,
        SkyPilotExecutor,
        cancel_run,
        executor_for,
    )
    from kura.execution.launch_spec import ContainerSpec, LaunchSpec, Mount, Step
    from kura.execution.logs import collapse_redraws, read_log_since, read_log_tail
    from kura.execution.runs import refresh_state, wait_for_run
    from kura.execution.state import ACTIVE, TERMINAL, RunState, StepState, read_state
    from kura.execution.summary import ema, run_summary
    from kura.execution.supervisors import SupervisorStarter

# Names are imported on first use, so the supervisor process (which imports this package
# on its way to kura.execution.supervisor) starts without loading every executor.
_LAZY = {
    "DockerExecutor": "executors",
    "Executor": "executors",
    "Handle": "executors",
    "HostExecutor": "executors",
    "SkyPilotExecutor": "executors",
    "executor_for": "executors",
    "ContainerSpec": "launch_spec",
    "LaunchSpec": "launch_spec",
    "Mount": "launch_spec",
    "Step": "launch_spec",
    "collapse_redraws": "logs",
    "read_log_since": "logs",
    "read_log_tail": "logs",
    "ema": "summary",
    "cancel_run": "executors",
    "refresh_state": "runs",
    "wait_for_run": "runs",
    "ACTIVE": "state",
    "TERMINAL": "state",
    "RunState": "state",
    "StepState": "state",
    "read_state": "state",
    "run_summary": "summary",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kura.execution.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ACTIVE",
    "TERMINAL",
    "ContainerSpec",
    "DockerExecutor",
    "Executor",
    "Handle",
    "HostExecutor",
    "LaunchSpec",
    "Mount",
    "RunState",
    "SkyPilotExecutor",
    "Step",
    "StepState",
    "cancel_run",
    "collapse_redraws",
    "ema",
    "executor_for",
    "launch",
    "read_log_since",
    "read_log_tail",
    "read_state",
    "refresh_state",
    "run_summary",
    "step_log",
    "wait_for_run",
]


def launch(
    spec: LaunchSpec,
    *,
    foreground: bool = False,
    backend: str = "musubi-tuner",
    backend_config: dict[str, Any] | None = None,
    executor: Executor | None = None,
    executor_options: dict[str, Any] | None = None,
    supervisors: SupervisorStarter | None = None,
) -> RunState:
    """Start ``spec`` (a new attempt when the run finished before) and return its state.

    Detached by default: the run goes on after this process exits. ``foreground`` waits for
    the end. ``backend`` (its name) diagnoses a failure; ``backend_config`` (what its
    diagnosis needs of the run's settings) lets it pick the next memory saving. Pass a
    configured ``executor`` (e.g. a SkyPilotExecutor with its accelerator and bucket), or
    ``executor_options`` for :func:`executor_for`. ``supervisors`` starts the run's
    supervisor (:mod:`kura.execution.supervisors`; a fresh interpreter when None).
    """
    from kura.execution.executors import executor_for
    from kura.execution.runs import refresh_state

    if executor is None:
        executor = executor_for(spec.executor, **(executor_options or {}))
    chosen = executor
    handle = chosen.submit(
        spec,
        foreground=foreground,
        backend=backend,
        backend_config=backend_config,
        supervisors=supervisors,
    )
    return refresh_state(handle.run_dir)


def step_log(run_dir: Path, step: str | None = None) -> Path:
    """The log file of ``step``, or of the current (else first) step."""
    from kura.execution.state import read_state

    state = read_state(run_dir)
    if step is not None:
        return Path(state.step(step).log)
    if state.log_path:
        return Path(state.log_path)
    return Path(state.steps[0].log)
