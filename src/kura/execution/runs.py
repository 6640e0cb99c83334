"""Follow and stop a launched run from any Kura process: re-attach, wait, cancel.

Nothing here depends on being the process that launched the run: everything is read from
``runs/<id>/state.json``, the step exit files and the kernel's process table, so a Kura
crash or a reboot never loses track of a detached run.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from kura.execution.exits import exit_message
from kura.execution.launch_spec import load_launch_record
from kura.execution.procutil import (
    process_alive,
    run_processes_alive,
    signal_group,
    signal_process,
)
from kura.execution.state import RunState, cancel_marker, exit_file, read_state, update_state
from kura.fsutil import atomic_write_text

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "RemoteStop",
    "refresh_state",
    "run_is_live",
    "stop_run",
    "wait_for_run",
]

DEFAULT_GRACE_SECONDS = 20.0
_POLL = 0.1

RemoteStop = Callable[[RunState, float], "list[str] | None"]
"""An executor's ``remote_stop``: the argv that stops what outlives a killed client."""


def run_is_live(state: RunState) -> bool:
    """True while the supervisor or the current step's process group still runs."""
    return run_processes_alive(state.supervisor_pid, state.supervisor_start, state.pgid)


def refresh_state(run_dir: Path, *, holding_launch_lock: bool = False) -> RunState:
    """Read the state and settle it if its processes are gone.

    A run whose state says queued/caching/training but whose supervisor and step are both
    gone is finished: its outcome comes from the step's exit file (written by the supervisor
    before state.json), else it failed with "the process disappeared (exit status unknown)".
    ``holding_launch_lock`` is for the launcher, which holds the run's launch lock itself.
    """
    run_dir = Path(run_dir)
    state = read_state(run_dir)
    if state.is_terminal or run_is_live(state):
        return state
    starting = state.supervisor_pid is None and not holding_launch_lock
    if starting and _launch_lock_held(run_dir):
        return state  # the supervisor is starting up and has not attached yet
    return update_state(run_dir, lambda s: _settle(run_dir, s))


def _launch_lock_held(run_dir: Path) -> bool:
    path = run_dir / ".launch.lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _settle(run_dir: Path, state: RunState) -> None:
    if state.is_terminal or run_is_live(state):
        return  # the supervisor finished it between our first read and the lock
    if cancel_marker(run_dir).exists():
        state.message = "cancelled on request"
        state.move_to("cancelled")
        return
    name = state.current_step
    code = _read_exit(run_dir, name) if name else None
    state.pid = state.pgid = None
    if name is None or code is None:
        state.message = "the process disappeared (exit status unknown)"
        if name is not None:
            step = state.step(name)
            if step.status == "running":
                step.status = "failed"
            state.diagnosis = _diagnose(run_dir, name, None)
        state.move_to("failed")
        return
    step = state.step(name)
    step.exit_code = code
    step.status = "succeeded" if code == 0 else "failed"
    state.exit_code = code
    if code != 0:
        state.diagnosis = _diagnose(run_dir, name, code)
        state.message = exit_message(name, code)
        state.move_to("failed")
        return
    remaining = [s.name for s in state.steps if s.status == "pending"]
    if remaining:
        state.message = (
            f"the supervisor disappeared after step {name} finished; "
            f"steps not run: {', '.join(remaining)}"
        )
        state.move_to("failed")
        return
    state.move_to("succeeded")


def _diagnose(run_dir: Path, name: str, code: int | None) -> dict[str, object]:
    step = read_state(run_dir).step(name)
    from kura.execution.logs import diagnose_step

    record = load_launch_record(run_dir)
    return diagnose_step(
        Path(step.log),
        backend=record.backend,
        step=name,
        exit_code=code,
        config=record.backend_config,
        offset=step.log_offset,
        run_dir=Path(run_dir),
    )


def _read_exit(run_dir: Path, step: str) -> int | None:
    try:
        return int(exit_file(run_dir, step).read_text().strip())
    except (OSError, ValueError):
        return None


def wait_for_run(run_dir: Path, *, timeout: float | None = None, poll: float = 0.5) -> RunState:
    """Block until the run reaches a terminal state (or ``timeout`` passes); returns it."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        state = refresh_state(run_dir)
        if state.is_terminal or (deadline is not None and time.monotonic() >= deadline):
            return state
        time.sleep(poll)


def stop_run(run_dir: Path, *, grace: float, remote_stop: RemoteStop) -> RunState:
    """Stop a run: ``remote_stop``'s command first (the run's executor's: a container, a
    cloud job), then SIGTERM to the step's process group and the supervisor, SIGKILL after
    ``grace`` seconds, then mark it ``cancelled``. A finished run is returned unchanged.

    The executor is passed in, not looked up, because the executors are built on this module
    (:func:`kura.execution.executors.cancel_run` looks it up by the name the run records)."""
    run_dir = Path(run_dir)
    state = refresh_state(run_dir)
    if state.is_terminal:
        return state
    atomic_write_text(cancel_marker(run_dir), "cancel requested\n")
    note = _stop_remote_side(remote_stop, state, grace)
    signal_process(state.supervisor_pid, signal.SIGTERM)
    signal_group(state.pgid, signal.SIGTERM)
    if not _wait_gone(run_dir, grace):
        state = read_state(run_dir)
        signal_group(state.pgid, signal.SIGKILL)
        if process_alive(state.supervisor_pid, state.supervisor_start):
            signal_process(state.supervisor_pid, signal.SIGKILL)
        _wait_gone(run_dir, 10.0)

    def mark(current: RunState) -> None:
        if current.is_terminal:
            if note:
                current.message = f"{current.message or current.status}; {note}"
            return
        if current.current_step is not None:
            step = current.step(current.current_step)
            if step.status == "running":
                step.status = "cancelled"
        current.pid = current.pgid = None
        current.message = "cancelled on request" + (f"; {note}" if note else "")
        current.move_to("cancelled")

    return update_state(run_dir, mark)


def _wait_gone(run_dir: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not run_is_live(read_state(run_dir)):
            return True
        time.sleep(_POLL)
    return not run_is_live(read_state(run_dir))


def _stop_remote_side(remote_stop: RemoteStop, state: RunState, grace: float) -> str | None:
    """Containers and cloud jobs outlive a killed client: stop them by name first.

    Returns a note for the run's message when that did not work (the process-group kill that
    follows still stops the local client, but the container or job may need a manual stop).
    """
    argv = remote_stop(state, grace)
    if argv is None:
        return None
    try:
        result = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=grace + 30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`{' '.join(argv)}` failed ({exc}); check it stopped"
    if result.returncode != 0:
        return f"`{' '.join(argv)}` exited with status {result.returncode}; check it stopped"
    return None
