"""A SkyPilot run from `run new` to an approved plan to the `sky jobs launch` a recording
`sky` receives: the planned GPU class is the run's, the cloud settings come from kura.toml
(run.yaml overrides them), and a plan that cannot launch says so before approval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kura.errors import CheckFailed
from kura.runs.approval import approve_run
from kura.runs.launching import launch_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from kura.yamlio import load_yaml
from tests.runs.skypilot_run import SKYPILOT_TOML, new_sky_run, sky_ws

__all__ = ["sky_ws"]  # the fixture


def _sky_calls(tmp_path: Path) -> list[list[str]]:
    return [json.loads(line) for line in (tmp_path / "sky.jsonl").read_text().splitlines()]


def test_planned_gpu_and_kura_toml_settings_reach_the_sky_task(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(sky_ws)
    report = plan_run(sky_ws, run_id, gpu="h100-sxm")
    assert [c.status for c in report.checks if c.check == "skypilot launch"] == ["ok"]
    approve_run(sky_ws, run_id)
    state = launch_run(sky_ws, run_id, detach=False).state
    assert state.status == "succeeded", state
    task_path = sky_ws.run_dir(run_id) / "sky-task.yaml"
    assert _sky_calls(tmp_path) == [
        ["jobs", "launch", "-n", f"kura-{run_id}", "-y", str(task_path)]
    ]
    task = load_yaml(task_path)
    assert task["resources"] == {
        "accelerators": "H100:1",
        "cloud": "aws",
        "region": "us-east-1",
        "use_spot": True,
        "disk_size": 200,
        "image_id": "docker:kura/musubi-tuner:0.3.4",
    }
    prefix = f"s3://kura-test-bucket/runs/{run_id}"
    written = {k: v for k, v in task["file_mounts"].items() if isinstance(v, dict)}
    assert written == {
        f"/kura/run/{name}": {"source": f"{prefix}/{name}", "mode": "MOUNT"}
        for name in ("cache", "output", "logs")
    }


def test_the_launched_task_is_one_skypilot_accepts(sky_ws: Workspace, tmp_path: Path) -> None:
    """The task of a real plan (every mount the backend compiled: the run folder, the
    dataset, each model file and shard, the three writable folders) through SkyPilot's own
    ``sky.Task.from_yaml``."""
    from tests.execution.skypilot_own_code import load_with_skypilot

    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(sky_ws)
    plan_run(sky_ws, run_id, gpu="h100-sxm")
    approve_run(sky_ws, run_id)
    launch_run(sky_ws, run_id, detach=False)
    task_path = sky_ws.run_dir(run_id) / "sky-task.yaml"
    [loaded] = load_with_skypilot([task_path], tmp_path / "sky-home")
    assert "error" not in loaded, loaded
    assert loaded["accelerators"] == {"H100": 1}
    assert (loaded["cloud"], loaded["region"], loaded["use_spot"]) == ("AWS", "us-east-1", True)
    assert sorted(loaded["storage_mounts"]) == [
        f"/kura/run/{n}" for n in ("cache", "logs", "output")
    ]
    assert loaded["file_mounts"]["/kura/data/myaku"] == str(sky_ws.dataset_dir("myaku") / "media")


def test_run_yaml_overrides_kura_toml(sky_ws: Workspace) -> None:
    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(
        sky_ws, "execution.skypilot.use_spot=false", "execution.skypilot.bucket=gs://other/k"
    )
    plan_run(sky_ws, run_id, gpu="a100-80gb")
    approve_run(sky_ws, run_id)
    launch_run(sky_ws, run_id, detach=False)
    task = load_yaml(sky_ws.run_dir(run_id) / "sky-task.yaml")
    assert task["resources"]["use_spot"] is False
    assert task["resources"]["accelerators"] == "A100-80GB:1"
    assert task["resources"]["cloud"] == "aws"  # not overridden: kura.toml's
    assert task["file_mounts"]["/kura/run/output"]["source"] == f"gs://other/k/{run_id}/output"


def test_a_plan_without_a_bucket_says_so_before_approval(sky_ws: Workspace) -> None:
    run_id = new_sky_run(sky_ws)
    report = plan_run(sky_ws, run_id, gpu="h100-sxm")
    failed = [c for c in report.checks if c.check == "skypilot launch"]
    assert [(c.status, c.blocking) for c in failed] == [("failed", True)]
    assert "bucket" in failed[0].detail and "[skypilot]" in failed[0].detail
    assert (
        report.to_dict()["next"][0]["command"] == f"kura run plan {run_id} --gpu h100-sxm"
    )  # the GPU it was planned for
    assert "skypilot launch" in (sky_ws.run_dir(run_id) / "plan.md").read_text()
    with pytest.raises(CheckFailed, match="bucket"):
        approve_run(sky_ws, run_id)


def test_a_gpu_class_skypilot_cannot_name_fails_the_plan(sky_ws: Workspace) -> None:
    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(sky_ws)
    report = plan_run(sky_ws, run_id, gpu="rtx-4090")
    [check] = [c for c in report.checks if c.check == "skypilot launch"]
    assert check.blocking and "no SkyPilot accelerator name" in check.detail
    assert "h100-sxm" in check.detail  # the fix lists the classes that have one


def test_a_bucket_that_is_not_a_url_is_refused_with_the_key(sky_ws: Workspace) -> None:
    from kura.errors import InvalidInput

    with sky_ws.config_path.open("a") as handle:
        handle.write('\n[skypilot]\nbucket = "my-bucket"\n')
    with pytest.raises(InvalidInput, match=r"skypilot\.bucket.*s3://NAME"):
        sky_ws.config()


def test_eight_gpus_on_one_node_rent_eight_and_launch_eight_processes(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    """`execution.gpus: 8` rents `H100:8` and Musubi's train step runs accelerate's data
    parallel launch over all of them (``--num_processes 8 --multi_gpu``); the plan's cost
    is for all eight."""
    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(sky_ws, "execution.gpus=8", "training.effective_batch=8")
    report = plan_run(sky_ws, run_id, gpu="h100-sxm")
    approve_run(sky_ws, run_id)
    launch_run(sky_ws, run_id, detach=False)
    task = load_yaml(sky_ws.run_dir(run_id) / "sky-task.yaml")
    assert task["resources"]["accelerators"] == "H100:8"
    [train] = [line for line in task["run"].splitlines() if "accelerate launch" in line]
    assert "accelerate launch --num_processes 8 --num_machines 1 " in train
    assert "--num_processes 8" in train and "--multi_gpu" in train
    assert "× 8" in (sky_ws.run_dir(run_id) / "plan.md").read_text()
    assert report.gpu["usd_per_hour"] is not None


def test_the_approval_binds_the_resolved_cloud_settings(sky_ws: Workspace) -> None:
    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(sky_ws)
    plan_run(sky_ws, run_id, gpu="h100-sxm")
    approve_run(sky_ws, run_id)
    folder = sky_ws.run_dir(run_id)
    planned = json.loads((folder / "plan.json").read_text())["cloud"]
    approved = json.loads((folder / "approval.json").read_text())["cloud"]
    assert planned == approved
    assert (approved["accelerator"], approved["count"]) == ("H100", 1)
    assert approved["settings"] == {
        "bucket": "s3://kura-test-bucket/runs",
        "cloud": "aws",
        "region": "us-east-1",
        "use_spot": True,
        "disk_size_gb": 200,
    }


def test_kura_toml_cloud_settings_changed_after_approval_refuse_the_launch(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    """kura.toml is in no digest: the gate resolves the settings again and names each change."""
    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(sky_ws)
    plan_run(sky_ws, run_id, gpu="h100-sxm")
    approve_run(sky_ws, run_id)
    text = sky_ws.config_path.read_text()
    sky_ws.config_path.write_text(
        text.replace("kura-test-bucket/runs", "other-bucket").replace("use_spot = true", "")
    )
    with pytest.raises(CheckFailed) as caught:
        launch_run(sky_ws, run_id, detach=False)
    message = str(caught.value.message)
    assert "cloud settings changed since approval" in message
    assert "settings.bucket 's3://kura-test-bucket/runs' → 's3://other-bucket'" in message
    assert "settings.use_spot True → None" in message
    assert f"kura run plan {run_id}" in str(caught.value.hint)
    assert not (tmp_path / "sky.jsonl").exists()  # nothing reached `sky`
    plan_run(sky_ws, run_id, gpu="h100-sxm")
    approve_run(sky_ws, run_id)
    launch_run(sky_ws, run_id, detach=False)
    task = load_yaml(sky_ws.run_dir(run_id) / "sky-task.yaml")
    assert task["file_mounts"]["/kura/run/output"]["source"] == f"s3://other-bucket/{run_id}/output"
    assert "use_spot" not in task["resources"]


def test_run_yaml_cloud_settings_changed_after_approval_refuse_the_launch(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(sky_ws, "execution.skypilot.use_spot=false")
    plan_run(sky_ws, run_id, gpu="h100-sxm")
    approve_run(sky_ws, run_id)
    path = sky_ws.run_dir(run_id) / "run.yaml"
    path.write_text(path.read_text().replace("use_spot: false", "use_spot: true"))
    with pytest.raises(CheckFailed) as caught:
        launch_run(sky_ws, run_id, detach=False)
    assert "execution.skypilot.use_spot False → True" in caught.value.message
    assert f"kura run plan {run_id}" in caught.value.hint
    assert not (tmp_path / "sky.jsonl").exists()
