"""The supervisor: the small process that carries out one run, step by step.

``python -m kura.execution.supervisor <run_dir> --lock-fd N`` is started in its own session
by :func:`kura.execution.executors.host.start_supervisor`, so it outlives the Kura command
that launched it. It inherits the flock on ``runs/<id>/.launch.lock`` (fd N) and holds it
until it exits: while it runs, no second launch of the run can start.

For each step it opens ``logs/<step>.log`` for appending and hands that file to the step as
stdout and stderr (never a pipe: a full pipe would block the trainer), starts the step in a
new session so the whole process group can be signalled, records pid and exit status, and
stops at the first failure. Before every step it verifies the run's locked model files again
(:mod:`kura.execution.modelcheck`): one changed during an earlier step fails the run, named.
SIGTERM (sent by ``cancel``) is forwarded to the step's group. A run whose owner wrote a
guard (:mod:`kura.execution.guard`, a sweep trial's lease) is stopped when the guard says so.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from kura.errors import CheckFailed
from kura.execution.commands import StepCommand
from kura.execution.exits import exit_message
from kura.execution.gpuwatch import GPU_SAMPLE_LIMIT, GpuReading, GpuWatch
from kura.execution.guard import GuardWatch, read_guard, remove_guard
from kura.execution.launch_spec import CACHE_STEPS, LaunchRecord, Step, load_launch_record
from kura.execution.logs import diagnose_step
from kura.execution.modelcheck import changed_model_file
from kura.execution.procutil import group_alive, process_start_ticks, signal_group
from kura.execution.state import (
    RunState,
    cancel_marker,
    exit_file,
    now_iso,
    read_state,
    update_state,
)
from kura.fsutil import atomic_write_text

__all__ = ["main", "run_steps", "warm_up"]

_LATER_IMPORTS = (
    "kura.execution.executors",
    "kura.execution.exits",
    "kura.execution.logs",
    "kura.models.lockcheck",
    "kura.schema.lock",
    "kura.schema.records",
    "kura.planning.gpus",
)


def warm_up() -> None:
    """Load what a supervisor loads on its way through a run rather than at start-up (the
    model re-check with the bundle table and every backend it may judge a file with, a
    step's command, a failure's diagnosis). A fork server calls it once, so a supervisor
    forked from it starts its first step without any of it (:mod:`kura.execution.forkserver`)."""
    import importlib

    from kura.backends.registry import backend_names, get_backend
    from kura.models.bundles import list_bundles

    for module in _LATER_IMPORTS:
        importlib.import_module(module)
    for name in backend_names():
        get_backend(name)
    list_bundles()


@dataclass
class _Current:
    pgid: int | None = None
    terminated: bool = False
    guard_reason: str | None = None
    """Set when the run's guard says the run must stop (its sweep lease is gone)."""


def run_steps(run_dir: Path, record: LaunchRecord) -> int:
    """Run every step of ``record`` in order; returns the process exit code for the supervisor."""
    current = _Current()

    def on_sigterm(signum: int, frame: object) -> None:
        current.terminated = True
        signal_group(current.pgid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, on_sigterm)

    me, my_start = os.getpid(), process_start_ticks(os.getpid())

    def attach(state: RunState) -> None:
        state.supervisor_pid, state.supervisor_start = me, my_start

    update_state(run_dir, attach)
    watch = _start_guard(run_dir, current)
    try:
        return _run_all(run_dir, record, current)
    finally:
        if watch is not None:
            watch.stop()


def _run_all(run_dir: Path, record: LaunchRecord, current: _Current) -> int:
    spec = record.spec
    for step in spec.steps:
        if current.guard_reason is not None:
            _finish_guarded(run_dir, None, current.guard_reason)
            return 0
        if _cancel_requested(run_dir, current):
            _finish_cancelled(run_dir, None)
            return 0
        if step.name in spec.skip_steps:
            update_state(run_dir, functools.partial(_skip, name=step.name))
            continue
        changed = changed_model_file(run_dir, spec.run_id)
        if changed is not None:
            _finish_models_changed(run_dir, step.name, changed)
            return 0
        code = _run_one(run_dir, record, step, current)
        if current.guard_reason is not None:
            _finish_guarded(run_dir, code, current.guard_reason)
            return 0
        if _cancel_requested(run_dir, current):
            _finish_cancelled(run_dir, code)
            return 0
        if code == 0 and _stopped_by_trainer(run_dir, record, step.name):
            _finish_cancelled(
                run_dir,
                code,
                message=f"step {step.name} was interrupted "
                "(the trainer caught it and exited 0): recorded as a cancel",
            )
            return 0
        if code != 0:
            _finish_failed(run_dir, record, step.name, code)
            return 0

    def succeed(state: RunState) -> None:
        state.exit_code = 0
        state.pid = state.pgid = None
        state.move_to("succeeded")

    update_state(run_dir, succeed)
    return 0


def _run_one(run_dir: Path, record: LaunchRecord, step: Step, current: _Current) -> int:
    from kura.execution.executors import step_command

    command: StepCommand = step_command(record, step)
    log_path = Path(run_dir) / "logs" / f"{step.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log, open(os.devnull, "rb") as devnull:
        offset = log.tell()
        log.write(f"[kura] {now_iso()} step {step.name} starting\n".encode())
        log.flush()
        try:
            process = subprocess.Popen(
                command.argv,
                cwd=command.cwd,
                env=command.env,
                stdin=devnull,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        except OSError as exc:
            log.write(
                f"[kura] cannot start step {step.name}: {type(exc).__name__}: {exc}\n".encode()
            )
            return _not_started(run_dir, step, log_path, offset)
    current.pgid = process.pid
    if current.terminated or current.guard_reason is not None:
        signal_group(process.pid, signal.SIGTERM)

    def started(state: RunState) -> None:
        caching = step.kind in ("prepare", "cache") or step.name in CACHE_STEPS
        state.move_to("caching" if caching else "training")
        state.current_step = step.name
        state.pid = state.pgid = process.pid
        state.container = command.container
        state.log_path = str(log_path)
        record_ = state.step(step.name)
        record_.status = "running"
        record_.pid = record_.pgid = process.pid
        record_.container = command.container
        record_.log_offset = offset
        record_.started_at = now_iso()

    update_state(run_dir, started)
    with GpuWatch(functools.partial(_record_gpu, run_dir, step.name), session=process.pid):
        code = process.wait()
    current.pgid = None
    atomic_write_text(exit_file(run_dir, step.name), f"{code}\n")

    def ended(state: RunState) -> None:
        record_ = state.step(step.name)
        record_.exit_code = code
        record_.finished_at = now_iso()
        record_.status = "succeeded" if code == 0 else "failed"

    update_state(run_dir, ended)
    return code


def _finish_failed(run_dir: Path, record: LaunchRecord, name: str, code: int) -> None:
    diagnosis = diagnose_step(
        Path(run_dir) / "logs" / f"{name}.log",
        backend=record.backend,
        step=name,
        exit_code=code,
        config=record.backend_config,
        offset=_log_offset(run_dir, name),
        run_dir=Path(run_dir),
    )

    def fail(state: RunState) -> None:
        state.exit_code = code
        state.pid = state.pgid = None
        state.message = exit_message(name, code)
        state.diagnosis = diagnosis
        state.move_to("failed")

    update_state(run_dir, fail)


def _start_guard(run_dir: Path, current: _Current) -> GuardWatch | None:
    """Start the run's guard (``guard.json``), if its owner asked for one."""
    guard = read_guard(run_dir)
    if guard is None:
        return None

    def stop_the_run(reason: str) -> None:
        current.guard_reason = reason
        pgid = current.pgid
        signal_group(pgid, signal.SIGTERM)
        timer = threading.Timer(guard.stop_grace_seconds, _kill_if_alive, args=(current, pgid))
        timer.daemon = True
        timer.start()

    watch = GuardWatch(guard, stop_the_run, log=Path(run_dir) / "logs" / "guard.log")
    watch.start()
    return watch


def _kill_if_alive(current: _Current, pgid: int | None) -> None:
    """The grace after the guard's SIGTERM is over: SIGKILL the step if it still runs."""
    if pgid is not None and current.pgid == pgid and group_alive(pgid):
        signal_group(pgid, signal.SIGKILL)


def _finish_guarded(run_dir: Path, code: int | None, reason: str) -> None:
    """The guard stopped the run: it ends cancelled with the guard's reason, and the guard
    file goes (its owner's claim on the run is over; a later relaunch by hand is the
    person's own)."""
    remove_guard(run_dir)
    _finish_cancelled(run_dir, code, message=f"stopped by its guard: {reason}")


def _finish_models_changed(run_dir: Path, name: str, error: CheckFailed) -> None:
    """A model file changed since approval (during an earlier step): step ``name`` is not
    started and the run fails, naming the file and the fix."""
    message = f"step {name} not started: {error.message}"
    if error.hint:
        message += f" ({error.hint})"

    def fail(state: RunState) -> None:
        state.pid = state.pgid = None
        state.current_step = name
        state.message = message
        state.move_to("failed")

    update_state(run_dir, fail)


def _not_started(run_dir: Path, step: Step, log_path: Path, offset: int) -> int:
    """A step whose program or folder does not exist: exit status 127, as a shell reports."""
    code = 127
    atomic_write_text(exit_file(run_dir, step.name), f"{code}\n")

    def record(state: RunState) -> None:
        state.current_step = step.name
        state.log_path = str(log_path)
        record_ = state.step(step.name)
        record_.status = "failed"
        record_.exit_code = code
        record_.log_offset = offset
        record_.started_at = record_.finished_at = now_iso()

    update_state(run_dir, record)
    return code


def _record_gpu(run_dir: Path, step: str, reading: GpuReading) -> None:
    """Write one GPU reading into state.json: the identity once (or when it becomes known),
    the memory sample always, thinned past the limit."""

    def record(state: RunState) -> None:
        if state.gpu is None or (state.gpu.get("name") is None and reading.name is not None):
            state.gpu = reading.identity()
        if reading.used_gib is None:
            return
        state.gpu_samples.append(
            {
                "t": now_iso(),
                "step": step,
                "used_gib": reading.used_gib,
                "process_gib": reading.process_gib,
            }
        )
        if len(state.gpu_samples) > GPU_SAMPLE_LIMIT:
            state.gpu_samples = state.gpu_samples[::2]

    update_state(run_dir, record)


def _log_offset(run_dir: Path, name: str) -> int:
    return read_state(run_dir).step(name).log_offset


def _skip(state: RunState, *, name: str) -> None:
    _mark_skipped(state, name)


def _mark_skipped(state: RunState, name: str) -> None:
    state.step(name).status = "skipped"


def _cancel_requested(run_dir: Path, current: _Current) -> bool:
    return current.terminated or cancel_marker(run_dir).exists()


def _stopped_by_trainer(run_dir: Path, record: LaunchRecord, name: str) -> bool:
    """A trainer that catches an interrupt and exits 0 (AI-Toolkit) did not succeed: its
    backend tells from the log of this attempt."""
    from kura.backends.registry import get_backend
    from kura.execution.logs import read_attempt_log

    log = Path(run_dir) / "logs" / f"{name}.log"
    text = read_attempt_log(log, offset=_log_offset(run_dir, name))
    return get_backend(record.backend).stopped(text, step=name, exit_code=0)


def _finish_cancelled(
    run_dir: Path, code: int | None, *, message: str = "cancelled on request"
) -> None:
    def cancel(state: RunState) -> None:
        if state.is_terminal:
            return
        if state.current_step is not None:
            record_ = state.step(state.current_step)
            if record_.status in ("running", "failed", "succeeded"):
                record_.status = "cancelled"
        state.exit_code = code
        state.message = message
        state.move_to("cancelled")

    update_state(run_dir, cancel)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kura.execution.supervisor")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--lock-fd", type=int, required=True)
    args = parser.parse_args(argv)
    # Keep the inherited lock descriptor open (and out of children) for our whole life.
    os.set_inheritable(args.lock_fd, False)
    record = load_launch_record(args.run_dir)
    try:
        return run_steps(args.run_dir, record)
    except Exception as exc:
        reason = f"the supervisor failed: {type(exc).__name__}: {exc}"

        def crash(state: RunState) -> None:
            if not state.is_terminal:
                state.message = reason
                state.move_to("failed")

        update_state(args.run_dir, crash)
        raise


if __name__ == "__main__":
    sys.exit(main())
