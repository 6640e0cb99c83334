"""The path from draft to a finished run, through the host executor and a fake checkout."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from kura.errors import CheckFailed
from kura.runs.approval import approve_run
from kura.runs.following import list_runs, run_status
from kura.runs.launching import launch_run, relaunch_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from tests.runs.fake_checkout import set_mode, use_fake_checkout

BUNDLE = "flux2-klein-base-4b"


@pytest.fixture
def host_ws(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    use_fake_checkout(ws, tmp_path, BUNDLE, monkeypatch)
    return ws


def _approved_run(ws: Workspace) -> str:
    run_id = create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=host", "training.epochs=2"],
        now=datetime(2026, 11, 30, 8, 0),
    ).run_id
    plan_run(ws, run_id, gpu="rtx-4090")
    approve_run(ws, run_id)
    return run_id


def test_an_approved_run_launches_and_finishes(host_ws: Workspace) -> None:
    run_id = _approved_run(host_ws)
    launched = launch_run(host_ws, run_id, detach=False)
    assert launched.state.status == "succeeded", launched.state
    output = host_ws.run_dir(run_id) / "output"
    assert (output / f"{run_id}.safetensors").is_file()
    status = run_status(host_ws, run_id)
    assert status.state is not None and status.state.status == "succeeded"
    assert status.progress is not None and status.progress.total == status.progress.step
    assert [r.status for r in list_runs(host_ws).runs] == ["succeeded"]


def test_launch_refuses_an_edit_after_approval_naming_the_key(host_ws: Workspace) -> None:
    run_id = _approved_run(host_ws)
    path = host_ws.run_dir(run_id) / "run.yaml"
    path.write_text(path.read_text().replace("  seed: 42", "  seed: 7"))
    with pytest.raises(CheckFailed, match=r"training\.seed 42 → 7"):
        launch_run(host_ws, run_id, detach=False)
    assert not (host_ws.run_dir(run_id) / "state.json").exists()


def test_launch_refuses_a_tampered_compiled_file(host_ws: Workspace) -> None:
    run_id = _approved_run(host_ws)
    toml = host_ws.run_dir(run_id) / "compiled" / "dataset.toml"
    toml.write_text(toml.read_text().replace("num_repeats = 1", "num_repeats = 9"))
    with pytest.raises(CheckFailed, match=r"compiled/dataset\.toml"):
        launch_run(host_ws, run_id, detach=False)


def test_launch_refuses_a_dataset_changed_after_approval(host_ws: Workspace) -> None:
    run_id = _approved_run(host_ws)
    caption = host_ws.dataset_dir("myaku") / "media" / "0.txt"
    caption.write_text("myaku, a different caption\n")
    with pytest.raises(CheckFailed, match="dataset myaku changed after approval"):
        launch_run(host_ws, run_id, detach=False)


def test_oom_relaunch_applies_only_the_approved_contingency(host_ws: Workspace) -> None:
    run_id = _approved_run(host_ws)
    approval = json.loads((host_ws.run_dir(run_id) / "approval.json").read_text())
    change = approval["contingency"]["change"]
    checkout = Path(host_ws.config().executor.musubi_checkout or "")
    set_mode(checkout, "oom")
    failed = launch_run(host_ws, run_id, detach=False)
    assert failed.state.status == "failed"
    assert failed.diagnosis is not None and failed.diagnosis.code == "cuda_oom"
    assert failed.diagnosis.next["key"] in change
    set_mode(checkout, "ok")
    again = relaunch_run(host_ws, run_id, detach=False).state
    assert again.status == "succeeded"
    assert again.attempt == 2
    skipped = [s.name for s in again.steps if s.status == "skipped"]
    assert skipped == ["cache_latents", "cache_text_encoder"]
    record = json.loads((host_ws.run_dir(run_id) / "approval.json").read_text())
    assert record["via"] == "contingency"
    assert record["contingency"] is None
    for key, value in change.items():
        assert record["run_yaml"]["backend"]["config"][key] == value


def test_secrets_in_the_environment_reach_no_written_file(
    host_ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_top_secret_value_123")
    run_id = _approved_run(host_ws)
    launch_run(host_ws, run_id, detach=False)
    for path in host_ws.root.rglob("*"):
        if path.is_file() and path.stat().st_size < 5_000_000:
            assert b"hf_top_secret_value_123" not in path.read_bytes(), path


def test_past_runs_feed_the_next_plan(host_ws: Workspace) -> None:
    checkout = Path(host_ws.config().executor.musubi_checkout or "")
    first = _approved_run(host_ws)
    set_mode(checkout, "oom")
    assert launch_run(host_ws, first, detach=False).state.status == "failed"
    set_mode(checkout, "ok")
    second = create_run(
        host_ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=host", "training.epochs=2"],
        now=datetime(2026, 11, 30, 9, 0),
    ).run_id
    report = plan_run(host_ws, second, gpu="rtx-4090").to_dict()
    assert [r["run"] for r in report["evidence"]["runs"]] == [first]
    assert report["evidence"]["same_config_oom"] == [first]
    assert report["fits"] is False
    plan = (host_ws.run_dir(second) / "plan.md").read_text()
    assert f"- run {first}: failed (cuda_oom)" in plan


def test_following_a_finished_run_prints_its_log_and_stops(host_ws: Workspace) -> None:
    from kura.runs.following import follow_logs

    run_id = _approved_run(host_ws)
    launch_run(host_ws, run_id, detach=False)
    text = "".join(follow_logs(host_ws, run_id, step="train", poll=0.05))
    assert "epoch 2/2" in text
    assert "saving checkpoint" in text
