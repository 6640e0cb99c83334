"""A trainer killed by a signal is reported as killed by it, with resume offered when the
trainer saved a checkpoint (any backend: here Musubi's, with the fake Musubi as the step)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from run_helpers import make_spec, wait_until

from kura.execution import launch, read_state, wait_for_run
from kura.execution.exits import exit_message, signal_exit


@pytest.mark.parametrize(
    ("code", "name", "shell"),
    [
        (-9, "SIGKILL", False),
        (137, "SIGKILL", True),
        (-15, "SIGTERM", False),
        (143, "SIGTERM", True),
    ],
)
def test_exit_statuses_that_report_a_signal(code: int, name: str, shell: bool) -> None:
    found = signal_exit(code)
    assert found is not None and (found.name, found.shell) == (name, shell)


@pytest.mark.parametrize("code", [None, 0, 1, 2, 127, 128, 200])
def test_ordinary_exit_statuses_report_none(code: int | None) -> None:
    assert signal_exit(code) is None


def test_the_message_names_the_signal() -> None:
    assert exit_message("train", -9) == "step train was killed by SIGKILL (signal 9)"
    assert exit_message("train", 137) == (
        "step train was killed by SIGKILL (exit status 137 = 128 + 9)"
    )
    assert exit_message("train", 1) == "step train exited with status 1"


def _kill_while_training(
    tmp_path: Path, sig: signal.Signals, *, checkpoint: bool
) -> dict[str, object]:
    spec = make_spec(tmp_path, "slow")
    launch(spec)
    wait_until(lambda: read_state(spec.run_dir).status == "training")
    if checkpoint:  # what Musubi's --save_state leaves next to its checkpoints
        (spec.run_dir / "output" / "lora-000001-state").mkdir(parents=True)
    os.killpg(read_state(spec.run_dir).pgid or 0, sig)  # from outside Kura: not a cancel
    final = wait_for_run(spec.run_dir, timeout=60, poll=0.1)
    assert final.status == "failed" and final.exit_code == -int(sig)
    assert final.message == f"step train was killed by {sig.name} (signal {int(sig)})"
    assert final.diagnosis is not None
    return final.diagnosis


def test_a_killed_trainer_with_a_checkpoint_is_offered_resume(tmp_path: Path) -> None:
    diagnosis = _kill_while_training(tmp_path, signal.SIGTERM, checkpoint=True)
    assert diagnosis["code"] == "killed" and diagnosis["exit_code"] == -15
    assert str(diagnosis["message"]).startswith("step train was killed by SIGTERM (signal 15): ")
    assert "`kura run cancel` is recorded as cancelled" in str(diagnosis["message"])
    assert diagnosis["next"] == {
        "action": "resume",
        "command": "kura run resume run1",
        "why": "Musubi Tuner saved a checkpoint before the kill: continue from it",
    }
    details = diagnosis["details"]
    assert isinstance(details, dict) and details["signal"] == "SIGTERM"
    assert details["resume"] == "kura run resume run1"


def test_a_killed_trainer_without_a_checkpoint_is_offered_relaunch(tmp_path: Path) -> None:
    diagnosis = _kill_while_training(tmp_path, signal.SIGTERM, checkpoint=False)
    assert diagnosis["code"] == "killed"
    following = diagnosis["next"]
    assert isinstance(following, dict)
    assert following["action"] == "relaunch" and following["command"] == "kura run relaunch run1"
    assert "no saved trainer state" in str(following["why"])


def test_a_sigkill_keeps_the_trainers_host_oom_remedy_and_names_the_signal(
    tmp_path: Path,
) -> None:
    diagnosis = _kill_while_training(tmp_path, signal.SIGKILL, checkpoint=True)
    assert diagnosis["code"] == "host_oom"  # Musubi's own reading of a SIGKILL
    message = str(diagnosis["message"])
    assert message.startswith("step train was killed by SIGKILL (signal 9): ")
    assert "OOM killer" in message and "Musubi Tuner: the machine ran out of RAM" in message
    details = diagnosis["details"]
    assert isinstance(details, dict) and details["resume"] == "kura run resume run1"
