"""The host executor end to end, with the fake Musubi script as the step."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from run_helpers import make_spec, pid_gone, wait_until
from safetensors.numpy import load_file

from kura.backends.musubi.progress import tail_progress
from kura.backends.musubi.tensorboard import read_scalars
from kura.errors import LockBusy, UsageError
from kura.execution import (
    HostExecutor,
    cancel_run,
    launch,
    read_state,
    refresh_state,
    step_log,
    wait_for_run,
)
from kura.execution.procutil import thread_caps


def test_foreground_run_succeeds_and_writes_outputs(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, steps=("cache_latents", "cache_text_encoder", "train"))
    state = launch(spec, foreground=True)
    assert state.status == "succeeded"
    assert state.exit_code == 0
    assert [s.status for s in state.steps] == ["succeeded"] * 3
    assert all(s.exit_code == 0 for s in state.steps)
    assert state.executor == "host"
    assert state.started_at
    assert state.finished_at
    assert state.started_at.endswith("Z")
    lora = load_file(str(spec.run_dir / "output" / "lora.safetensors"))
    assert next(iter(lora.values())).shape == (2, 2)
    assert (spec.run_dir / "output" / "lora-000001.safetensors").exists()
    scalars = read_scalars(spec.run_dir / "tb")
    assert [step for step, _ in scalars["loss/current"]] == [1, 2, 3, 4, 5, 6]
    progress = tail_progress(step_log(spec.run_dir, "train"))
    assert (progress.step, progress.total, progress.epoch) == (6, 6, 2)


def test_log_file_gets_both_streams(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    launch(spec, foreground=True)
    text = step_log(spec.run_dir, "train").read_text()
    assert "stdout line from the fake" in text
    assert "stderr line from the fake" in text
    assert "avr_loss=" in text


def test_huge_output_does_not_block(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "ok", "--fake_spam_bytes", str(3 * 1024 * 1024))
    state = launch(spec, foreground=True)
    assert state.status == "succeeded"
    assert step_log(spec.run_dir, "train").stat().st_size > 3 * 1024 * 1024


def test_detached_run_finishes_and_state_follows(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "ok", "--fake_step_seconds", "0.05")
    state = launch(spec)
    assert state.status in ("queued", "training", "succeeded")
    final = wait_for_run(spec.run_dir, timeout=60, poll=0.05)
    assert final.status == "succeeded"
    assert final.supervisor_pid is not None
    assert final.steps[0].pid is not None


def test_failure_is_diagnosed(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "oom")
    state = launch(spec, foreground=True, backend_config={"gradient_checkpointing": False})
    assert state.status == "failed"
    assert state.exit_code == 1
    assert state.diagnosis is not None
    assert state.diagnosis["code"] == "cuda_oom"
    assert state.diagnosis["phase"] == "training"
    assert state.diagnosis["next"] == {"action": "enable", "key": "gradient_checkpointing"}


def test_a_failed_step_stops_the_run(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "crash", steps=("train",))
    state = launch(spec, foreground=True)
    assert state.status == "failed"
    assert state.diagnosis is not None
    assert state.diagnosis["code"] == "unknown"
    assert "RuntimeError: fake failure" in state.diagnosis["evidence"]


def test_skip_steps_are_not_run(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, steps=("cache_latents", "train"), skip_steps=("cache_latents",))
    state = launch(spec, foreground=True)
    assert [s.status for s in state.steps] == ["skipped", "succeeded"]
    assert not (spec.run_dir / "logs" / "cache_latents.log").exists()


def test_thread_caps_unless_step_sets_them(tmp_path: Path) -> None:
    report = tmp_path / "env.json"
    spec = make_spec(tmp_path, "ok", "--fake_env_report", str(report))
    step = spec.steps[0]
    spec.steps[0] = type(step)(step.name, step.argv, {**step.env, "MKL_NUM_THREADS": "7"}, step.cwd)
    launch(spec, foreground=True)
    seen = json.loads(report.read_text())
    assert seen["OMP_NUM_THREADS"] == thread_caps(1)["OMP_NUM_THREADS"]
    assert seen["MKL_NUM_THREADS"] == "7"


def test_cancel_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    spec = make_spec(tmp_path, "hang", "--fake_child_pidfile", str(pidfile))
    launch(spec)
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() != "")
    child = int(pidfile.read_text())
    step_pid = read_state(spec.run_dir).pid
    assert step_pid is not None
    state = cancel_run(spec.run_dir, grace=5)
    assert state.status == "cancelled"
    assert state.steps[0].status == "cancelled"
    wait_until(lambda: pid_gone(child) and pid_gone(step_pid))
    assert refresh_state(spec.run_dir).status == "cancelled"


def test_cancel_escalates_to_sigkill(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "hang")
    # A step that ignores SIGTERM: only SIGKILL stops it.
    stubborn = type(spec.steps[0])(
        "train",
        [
            sys.executable,
            "-c",
            "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(600)",
        ],
        {},
        str(spec.run_dir),
    )
    spec.steps[0] = stubborn
    launch(spec)
    wait_until(lambda: "ready" in _log_text(spec.run_dir))
    state = cancel_run(spec.run_dir, grace=0.5)
    assert state.status == "cancelled"
    assert state.steps[0].pid is not None
    wait_until(lambda: pid_gone(state.steps[0].pid or 0))


def test_second_launch_is_refused(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "hang")
    launch(spec)
    wait_until(lambda: read_state(spec.run_dir).status == "training")
    supervisor = read_state(spec.run_dir).supervisor_pid
    with pytest.raises(LockBusy) as caught:
        launch(spec)
    assert f"supervisor pid {supervisor}" in caught.value.message
    assert read_state(spec.run_dir).status == "training"
    cancel_run(spec.run_dir, grace=2)


def test_relaunch_starts_a_new_attempt(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "crash")
    assert launch(spec, foreground=True).status == "failed"
    ok = make_spec(tmp_path, "ok")
    state = launch(ok, foreground=True)
    assert state.status == "succeeded"
    assert state.attempt == 2
    archived = json.loads((spec.run_dir / "attempts" / "1.json").read_text())
    assert archived["status"] == "failed"
    assert read_state(spec.run_dir).diagnosis is None


def test_missing_secret_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(UsageError, match="HF_TOKEN"):
        launch(make_spec(tmp_path, pass_env=("HF_TOKEN",)))


def test_secret_reaches_the_step_and_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "hf_secret_value_123"
    monkeypatch.setenv("HF_TOKEN", secret)
    spec = make_spec(tmp_path, steps=("cache_text_encoder", "train"), pass_env=("HF_TOKEN",))
    state = launch(spec, foreground=True)
    assert state.status == "succeeded"
    assert state.pass_env == ["HF_TOKEN"]
    digest = hashlib.sha256(secret.encode()).hexdigest()
    assert f"HF_TOKEN sha256={digest}" in step_log(spec.run_dir, "train").read_text()
    for path in spec.run_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_step_without_secret_gets_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value_123")
    spec = make_spec(tmp_path)
    launch(spec, foreground=True)
    assert "HF_TOKEN sha256=unset" in step_log(spec.run_dir, "train").read_text()


def test_run_survives_the_launching_process(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "ok", "--fake_step_seconds", "0.15")
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from pathlib import Path
        from run_helpers import make_spec
        from kura.execution import launch
        launch(make_spec(Path({str(tmp_path)!r}), "ok", "--fake_step_seconds", "0.15"))
        print("launched", flush=True)
        time.sleep(600)
        """
    )
    kura_side = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert kura_side.stdout is not None
        assert kura_side.stdout.readline().strip() == "launched"
        os.kill(kura_side.pid, signal.SIGKILL)
        kura_side.wait()
        state = read_state(spec.run_dir)
        assert state.status in ("queued", "training")
        final = wait_for_run(spec.run_dir, timeout=60, poll=0.1)
        assert final.status == "succeeded"
        assert (spec.run_dir / "output" / "lora.safetensors").exists()
    finally:
        if kura_side.poll() is None:
            kura_side.kill()
            kura_side.wait()


def test_logs_and_poll_through_the_protocol(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    executor = HostExecutor()
    handle = executor.submit(spec, foreground=True)
    assert executor.poll(handle).status == "succeeded"
    assert executor.logs(handle) == spec.run_dir / "logs" / "train.log"


def test_wrong_executor_is_refused(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, executor="docker")
    with pytest.raises(UsageError, match="docker executor"):
        HostExecutor().submit(spec)


def _log_text(run_dir: Path) -> str:
    path = run_dir / "logs" / "train.log"
    return path.read_text() if path.exists() else ""


def test_nan_run_is_diagnosed(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "nan")
    state = launch(spec, foreground=True, backend_config={"mixed_precision": "bf16"})
    assert state.status == "failed"
    assert state.exit_code == 2
    assert state.diagnosis is not None
    assert state.diagnosis["code"] == "nan_loss"
    assert state.diagnosis["next"] == {"action": "decrease", "key": "learning_rate"}


def test_a_step_that_cannot_start_fails_clearly(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    spec.steps[0] = type(spec.steps[0])("train", ["no-such-program-kura"], {}, str(tmp_path))
    state = launch(spec, foreground=True)
    assert state.status == "failed"
    assert state.exit_code == 127
    assert state.steps[0].status == "failed"
    assert state.diagnosis is not None
    assert state.diagnosis["code"] == "missing_files"
    assert state.diagnosis["next"] == {"action": "provide_file", "path": "no-such-program-kura"}


def test_stale_queued_state_is_replaced(tmp_path: Path) -> None:
    from kura.execution.state import new_state, write_state

    spec = make_spec(tmp_path)
    write_state(spec.run_dir, new_state("run1", spec.run_dir, "host", ["train"], []))
    state = launch(spec, foreground=True)
    assert state.status == "succeeded"
    assert state.attempt == 2
    archived = json.loads((spec.run_dir / "attempts" / "1.json").read_text())
    assert archived["message"] == "the process disappeared (exit status unknown)"


def test_executor_for_needs_the_sky_accelerator() -> None:
    from kura.execution import SkyPilotExecutor, executor_for

    with pytest.raises(UsageError, match="GPU class"):
        executor_for("skypilot")
    chosen = executor_for("skypilot", accelerator="L40S")
    assert isinstance(chosen, SkyPilotExecutor)
    assert chosen.accelerator == "L40S"
    with pytest.raises(UsageError, match="unknown executor"):
        executor_for("slurm")


def test_supervisor_death_is_settled_when_the_step_ends(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, "slow")
    launch(spec)
    wait_until(lambda: read_state(spec.run_dir).status == "training")
    state = read_state(spec.run_dir)
    assert state.supervisor_pid is not None
    os.kill(state.supervisor_pid, signal.SIGKILL)
    wait_until(lambda: pid_gone(state.supervisor_pid or 0))
    # The step runs on in its own session: the run stays live until the step ends.
    assert refresh_state(spec.run_dir).status == "training"
    os.killpg(state.pgid or 0, signal.SIGTERM)
    final = wait_for_run(spec.run_dir, timeout=60, poll=0.1)
    assert final.status == "failed"
    assert final.message == "the process disappeared (exit status unknown)"


def test_slow_mode_cancel_from_the_protocol(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    spec = make_spec(tmp_path, "slow", "--fake_child_pidfile", str(pidfile))
    executor = HostExecutor()
    handle = executor.submit(spec)
    wait_until(lambda: tail_progress(executor.logs(handle)).step not in (None, 0))
    child = int(pidfile.read_text())
    assert executor.cancel(handle, grace=5).status == "cancelled"
    wait_until(lambda: pid_gone(child))


def test_run_summary_is_json_ready(tmp_path: Path) -> None:
    from kura.execution import run_summary

    spec = make_spec(tmp_path)
    launch(spec, foreground=True)
    from kura.backends.musubi.backend import BACKEND
    from kura.execution.summary import ema

    # Musubi's --logging_dir is the run's logs/ (the fake writes to tb/: move it there)
    (spec.run_dir / "tb").rename(spec.run_dir / "logs" / "tb")
    summary = run_summary(
        spec.run_dir, progress=tail_progress, loss_history=BACKEND.loss_history
    ).to_dict()
    json.dumps(summary)
    assert summary["state"]["status"] == "succeeded"
    assert summary["progress"]["step"] == 6
    assert summary["progress"]["fraction"] == 1.0
    assert summary["scalars"]["loss/current"][0] == 6
    assert summary["scalars"]["loss/epoch"][0] == 2
    assert summary["scalars"]["lr/unet"][1] == pytest.approx(1e-4)
    losses = read_scalars(spec.run_dir / "logs")["loss/current"]
    assert summary["progress"]["loss_ema"] == pytest.approx(ema(v for _, v in losses))
