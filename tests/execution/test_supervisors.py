"""A fork server starts a run's supervisor without Python's start-up: the same program,
the same session, lock, log and environment as a supervisor started fresh (a sweep worker
forks every trial's supervisor from one)."""

from __future__ import annotations

import hashlib
import os
import signal
from pathlib import Path

import pytest
from run_helpers import make_spec, pid_gone, wait_until

from kura.errors import CheckFailed, LockBusy, UsageError
from kura.execution import HostExecutor, cancel_run, launch, read_state, step_log, wait_for_run
from kura.execution.supervisors import ForkServer


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def test_a_forked_supervisor_runs_the_steps_as_a_fresh_one_does(tmp_path: Path) -> None:
    with ForkServer() as supervisors:
        first = make_spec(tmp_path, steps=("cache_latents", "train"))
        second = make_spec(tmp_path, run_id="run2")
        launch(first, supervisors=supervisors)
        launch(second, supervisors=supervisors)
        for spec in (first, second):
            state = wait_for_run(spec.run_dir, timeout=60, poll=0.05)
            assert state.status == "succeeded", state.message
            assert [s.status for s in state.steps] == ["succeeded"] * len(spec.steps)
            assert (spec.run_dir / "output" / "lora.safetensors").exists()
            assert "stderr line from the fake" in step_log(spec.run_dir, "train").read_text()
        # the lock went with the supervisor, not into the server: a relaunch starts
        wait_until(lambda: pid_gone(read_state(first.run_dir).supervisor_pid or 0))
        assert launch(first, supervisors=supervisors).attempt == 2
        assert wait_for_run(first.run_dir, timeout=60, poll=0.05).status == "succeeded"


def test_the_supervisor_is_nobodys_child_holds_the_lock_and_outlives_the_server(
    tmp_path: Path,
) -> None:
    spec = make_spec(tmp_path, "hang")
    with ForkServer() as supervisors:
        launch(spec, supervisors=supervisors)
        wait_until(lambda: read_state(spec.run_dir).status == "training")
        supervisor = read_state(spec.run_dir).supervisor_pid
        assert supervisor is not None
        assert _parent_of(supervisor) != os.getpid()
        assert os.getsid(supervisor) == supervisor  # a session of its own
        with pytest.raises(LockBusy, match=f"supervisor pid {supervisor}"):
            launch(spec, supervisors=supervisors)
    assert read_state(spec.run_dir).status == "training"  # the server ended, the run goes on
    assert cancel_run(spec.run_dir, grace=2).status == "cancelled"
    wait_until(lambda: pid_gone(supervisor))


def test_the_environment_at_the_launch_reaches_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ForkServer() as supervisors:
        secret = "hf_set_after_the_server_started"
        monkeypatch.setenv("HF_TOKEN", secret)
        spec = make_spec(tmp_path, pass_env=("HF_TOKEN",))
        launch(spec, supervisors=supervisors)
        assert wait_for_run(spec.run_dir, timeout=60, poll=0.05).status == "succeeded"
    digest = hashlib.sha256(secret.encode()).hexdigest()
    assert f"HF_TOKEN sha256={digest}" in step_log(spec.run_dir, "train").read_text()
    for path in spec.run_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_a_server_that_died_is_an_error_naming_the_run(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    with ForkServer() as supervisors:
        assert supervisors._process is not None
        os.kill(supervisors._process.pid, signal.SIGKILL)
        supervisors._process.wait()
        with pytest.raises(CheckFailed, match="fork server could not start the supervisor"):
            launch(spec, supervisors=supervisors)


def test_a_foreground_launch_starts_its_supervisor_fresh(tmp_path: Path) -> None:
    with ForkServer() as supervisors, pytest.raises(UsageError, match="foreground"):
        HostExecutor().submit(make_spec(tmp_path), foreground=True, supervisors=supervisors)
