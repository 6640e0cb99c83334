"""state.json: the state machine, damage reporting, and re-attaching to vanished runs."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from run_helpers import make_spec

from kura.errors import InvalidInput, StateConflict, UsageError
from kura.execution.launch_spec import LaunchRecord, save_launch_record
from kura.execution.runs import refresh_state
from kura.execution.state import (
    RunState,
    exit_file,
    new_state,
    read_state,
    state_path,
    update_state,
    write_state,
)


def _state(tmp_path: Path, steps: list[str] | None = None) -> tuple[Path, RunState]:
    run_dir = tmp_path / "runs" / "r1"
    state = new_state("r1", run_dir, "host", steps or ["train"], ["HF_TOKEN"])
    write_state(run_dir, state)
    (run_dir / "logs").mkdir(parents=True)
    save_launch_record(LaunchRecord(make_spec(tmp_path, run_id="r1"), {}, {}))
    return run_dir, state


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_state_round_trips(tmp_path: Path) -> None:
    run_dir, state = _state(tmp_path)
    back = read_state(run_dir)
    assert replace(back, updated_at="") == replace(state, updated_at="")
    assert back.status == "queued"
    assert back.steps[0].log == str(run_dir / "logs" / "train.log")
    data = json.loads(state_path(run_dir).read_text())
    assert data["created_at"].endswith("Z")
    assert data["pass_env"] == ["HF_TOKEN"]


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        (["caching", "training", "succeeded"], True),
        (["training", "failed"], True),
        (["caching", "cancelled"], True),
        (["training", "caching"], False),
        (["training", "succeeded", "training"], False),
        (["failed", "succeeded"], False),
        (["cancelled", "queued"], False),
    ],
)
def test_transitions(path: list[str], allowed: bool, tmp_path: Path) -> None:
    _, state = _state(tmp_path)
    if allowed:
        for status in path:
            state.move_to(status)  # type: ignore[arg-type]
        assert state.status == path[-1]
    else:
        for status in path[:-1]:
            state.move_to(status)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="cannot go from"):
            state.move_to(path[-1])  # type: ignore[arg-type]


def test_terminal_state_sets_finished_at(tmp_path: Path) -> None:
    _, state = _state(tmp_path)
    state.move_to("training")
    assert state.started_at is not None
    assert state.finished_at is None
    state.move_to("succeeded")
    assert state.finished_at is not None


@pytest.mark.parametrize(
    "damage",
    [
        "{not json",
        json.dumps({"run_id": "r1"}),
        "edit",
    ],
)
def test_damaged_state_names_file_and_fix(damage: str, tmp_path: Path) -> None:
    run_dir, _ = _state(tmp_path)
    path = state_path(run_dir)
    if damage == "edit":
        data = json.loads(path.read_text())
        data["status"] = "running-ish"
        damage = json.dumps(data)
    path.write_text(damage)
    with pytest.raises(InvalidInput) as caught:
        read_state(run_dir)
    assert str(path) in caught.value.message
    assert caught.value.path == str(path)
    assert "relaunch" in caught.value.hint


def test_a_missing_state_is_a_run_never_launched(tmp_path: Path) -> None:
    with pytest.raises(StateConflict, match="does not exist"):
        read_state(tmp_path / "nowhere")


def test_refresh_marks_vanished_process_failed(tmp_path: Path) -> None:
    run_dir, _ = _state(tmp_path)
    dead = _dead_pid()

    def running(state: RunState) -> None:
        state.move_to("training")
        state.supervisor_pid = state.pid = state.pgid = dead
        state.current_step = "train"
        state.step("train").status = "running"

    update_state(run_dir, running)
    state = refresh_state(run_dir)
    assert state.status == "failed"
    assert state.message == "the process disappeared (exit status unknown)"


def test_refresh_reads_recorded_exit_code(tmp_path: Path) -> None:
    run_dir, _ = _state(tmp_path, ["cache_latents", "train"])
    dead = _dead_pid()

    def running(state: RunState) -> None:
        state.move_to("training")
        state.supervisor_pid = state.pid = state.pgid = dead
        state.current_step = "train"
        state.step("cache_latents").status = "succeeded"
        state.step("train").status = "running"

    update_state(run_dir, running)
    exit_file(run_dir, "train").write_text("0\n")
    state = refresh_state(run_dir)
    assert state.status == "succeeded"
    assert state.exit_code == 0
    assert state.step("train").status == "succeeded"


def test_refresh_reads_recorded_failure_and_diagnoses(tmp_path: Path) -> None:
    run_dir, _ = _state(tmp_path)
    dead = _dead_pid()
    log = run_dir / "logs" / "train.log"
    log.write_text("Traceback (most recent call last):\nMemoryError\n")

    def running(state: RunState) -> None:
        state.move_to("training")
        state.supervisor_pid = state.pid = state.pgid = dead
        state.current_step = "train"

    update_state(run_dir, running)
    exit_file(run_dir, "train").write_text("1\n")
    state = refresh_state(run_dir)
    assert state.status == "failed"
    assert state.exit_code == 1
    assert state.diagnosis is not None
    assert state.diagnosis["code"] == "host_oom"


def test_refresh_leaves_a_finished_run_alone(tmp_path: Path) -> None:
    run_dir, _ = _state(tmp_path)
    update_state(run_dir, lambda s: s.move_to("succeeded"))
    before = state_path(run_dir).read_text()
    assert refresh_state(run_dir).status == "succeeded"
    assert state_path(run_dir).read_text() == before
