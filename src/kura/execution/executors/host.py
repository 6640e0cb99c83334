"""The host executor: steps run on this machine under a detached supervisor process.

``submit`` takes the run's launch lock, writes ``launch.json`` and a fresh ``state.json``,
and starts the supervisor in a new session (a fresh ``python -m kura.execution.supervisor``,
or a fork of a warm one: :mod:`kura.execution.forkserver`), handing it the locked file
descriptor. The lock then lives exactly as long as the supervisor: a second launch of
the same run fails with :class:`LockBusy` naming it, and a crashed supervisor never leaves
a stale lock. In foreground mode ``submit`` also waits for the supervisor (Ctrl-C cancels).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
from pathlib import Path
from typing import Any, ClassVar

from kura.errors import LockBusy, UsageError
from kura.execution.cloudjob import CloudJob
from kura.execution.commands import StepCommand
from kura.execution.executors.base import Handle
from kura.execution.launch_spec import LaunchRecord, LaunchSpec, Step, save_launch_record
from kura.execution.runs import DEFAULT_GRACE_SECONDS, refresh_state, stop_run
from kura.execution.state import (
    RunState,
    archive_state,
    cancel_marker,
    exit_file,
    new_state,
    now_iso,
    read_state,
    state_path,
    write_state,
)
from kura.execution.supervisors import FreshSupervisors, Started, SupervisorStarter

__all__ = ["HostExecutor", "start_supervisor"]

LOCK_NAME = ".launch.lock"


class HostExecutor:
    name = "host"
    in_container: ClassVar[bool] = False
    """Whether a step sees the run folder at the image's path (``/kura/run``), not the host's."""
    local_image: ClassVar[bool] = False
    """Whether a step runs in the backend's image on this machine (launch checks the image's
    trainer release; a new run takes the host instead when the trainer has no image)."""
    remote: ClassVar[bool] = False
    """Whether the run executes on another machine (the plan checks its cloud settings and
    the launch passes them)."""

    @staticmethod
    def command(record: LaunchRecord, step: Step) -> StepCommand:
        """The process of ``step`` on this machine, as compiled."""
        from kura.execution.commands import host_command

        return host_command(record, step)

    @staticmethod
    def remote_stop(state: RunState, grace: float) -> list[str] | None:
        """The argv that stops what outlives the local process (nothing, on the host)."""
        return None

    @staticmethod
    def cloud_job(state: RunState) -> CloudJob | None:
        """The run's job on a cloud engine, as the engine reports it (none on the host)."""
        return None

    def submit(
        self,
        spec: LaunchSpec,
        *,
        foreground: bool = False,
        backend: str = "musubi-tuner",
        backend_config: dict[str, Any] | None = None,
        supervisors: SupervisorStarter | None = None,
    ) -> Handle:
        """Start the run; detached by default, waiting for it when ``foreground``.
        ``backend`` names the trainer whose diagnosis reads a failed step's log;
        ``supervisors`` starts the supervisor (a fresh interpreter unless a launcher of many
        runs passes its :class:`~kura.execution.supervisors.ForkServer`)."""
        self.check_spec(spec)
        if foreground and supervisors is not None:
            raise UsageError("a foreground launch waits for its own supervisor: start it fresh")
        record = dataclasses.replace(self.prepare(spec, backend_config or {}), backend=backend)
        started = start_supervisor(record, supervisors or FreshSupervisors())
        handle = Handle(spec.run_id, Path(spec.run_dir), spec.executor)
        if foreground:
            process = started.process
            assert process is not None  # started fresh: this process's child
            try:
                process.wait()
            except KeyboardInterrupt:
                self.cancel(handle)
                raise
            refresh_state(handle.run_dir)
        return handle

    def check_spec(self, spec: LaunchSpec) -> None:
        if spec.executor != self.name:
            raise UsageError(
                f"run {spec.run_id} is planned for the {spec.executor} executor, not {self.name}"
            )
        if not spec.steps:
            raise UsageError(f"run {spec.run_id} has no steps to run")
        missing = [name for name in spec.pass_env if name not in os.environ]
        if missing:
            raise UsageError(
                f"{', '.join(missing)} must be set in the environment to launch run {spec.run_id}",
                hint=f"export {missing[0]}=… in this shell, or drop it from the run's pass_env",
            )

    def prepare(self, spec: LaunchSpec, backend_config: dict[str, Any]) -> LaunchRecord:
        """The record the supervisor will carry out (executors with extra needs override)."""
        return LaunchRecord(spec, backend_config, {})

    def poll(self, handle: Handle) -> RunState:
        return refresh_state(handle.run_dir)

    def logs(self, handle: Handle) -> Path:
        """The current (or last) step's log file."""
        state = read_state(handle.run_dir)
        if state.log_path:
            return Path(state.log_path)
        return Path(state.steps[0].log)

    def cancel(self, handle: Handle, *, grace: float = DEFAULT_GRACE_SECONDS) -> RunState:
        return stop_run(handle.run_dir, grace=grace, remote_stop=self.remote_stop)


def start_supervisor(record: LaunchRecord, supervisors: SupervisorStarter) -> Started:
    """Take the launch lock, reset the run for a new attempt, start the supervisor."""
    spec = record.spec
    run_dir = Path(spec.run_dir)
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    lock_path = run_dir / LOCK_NAME
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockBusy(
                f"run {spec.run_id} is already running ({_holder(lock_path)})",
                hint=f"follow it with `kura run watch {spec.run_id}`, or stop it with "
                f"`kura run cancel {spec.run_id}`",
                path=lock_path,
            ) from None
        attempt = _next_attempt(run_dir, spec.run_id)
        for step in spec.steps:
            with contextlib.suppress(FileNotFoundError):
                exit_file(run_dir, step.name).unlink()
        with contextlib.suppress(FileNotFoundError):
            cancel_marker(run_dir).unlink()
        save_launch_record(record)
        state = new_state(
            spec.run_id,
            run_dir,
            spec.executor,
            [s.name for s in spec.steps],
            spec.pass_env,
            attempt=attempt,
        )
        state.sky_job = record.options.get("sky_job")
        write_state(run_dir, state)
        started = supervisors.start(run_dir, fd, backend=record.backend)
        holder = {"supervisor_pid": started.pid, "run_id": spec.run_id, "since": now_iso()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        return started
    finally:
        os.close(fd)  # the supervisor's inherited copy keeps the lock


def _next_attempt(run_dir: Path, run_id: str) -> int:
    """Archive a finished attempt and number the next; refuse while old processes live."""
    if not state_path(run_dir).exists():
        return 1
    previous = refresh_state(run_dir, holding_launch_lock=True)
    if not previous.is_terminal:
        raise LockBusy(
            f"a step of run {run_id} is still running without its supervisor "
            f"(process group {previous.pgid})",
            hint=f"stop it with `kura run cancel {run_id}`, then launch again",
            path=state_path(run_dir),
        )
    return archive_state(run_dir) + 1


def _holder(lock_path: Path) -> str:
    try:
        info = json.loads(lock_path.read_text() or "{}")
    except (OSError, ValueError):
        return "supervisor pid unknown"
    return f"supervisor pid {info.get('supervisor_pid', '?')}, since {info.get('since', '?')}"
