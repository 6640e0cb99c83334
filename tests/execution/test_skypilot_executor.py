"""The SkyPilot executor: the task YAML, quoting of hostile paths, and a fake `sky`."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import make_spec, wait_until

from kura.errors import Unsupported, UsageError
from kura.execution import SkyPilotExecutor, cancel_run, launch, read_state, step_log
from kura.execution.executors.skypilot import run_script, sky_launch_argv, sky_task
from kura.execution.launch_spec import ContainerSpec, LaunchSpec, Mount, Step
from kura.schema.cloud import SkyPilotSettings
from kura.yamlio import load_yaml

HOSTILE = '/data/it\'s a "test"; rm -rf ~ $(whoami) `id` &&\n x'
# SkyPilot expands ${NAME} in file_mounts, so Kura refuses '$' there (tested below).
HOSTILE_MOUNT = '/data/it\'s a "test"; rm -rf ~ `id` &&\n x'
CONTAINER = ContainerSpec(
    image="ghcr.io/example/musubi:0.3.4",
    gpus="all",
    mounts=[
        Mount(source=HOSTILE_MOUNT, target="/workspace/dataset", read_only=True, purpose="test"),
        Mount(source="/models", target="/workspace/models", read_only=True, purpose="test"),
        Mount(source="/runs/r1/output", target="/workspace/output", read_only=False, purpose="t"),
    ],
    env={"HF_HUB_ENABLE_HF_TRANSFER": "1"},
    workdir="/app/musubi-tuner",
)

FAKE_SKY = """#!{python}
import json, os, sys, time
with open(os.environ["FAKE_SKY_RECORD"], "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["jobs", "launch"]:
    print("Managed job 'kura-run1' submitted (id: 7).", flush=True)
    sys.stderr.write("\\rsteps:  50%|#####     | 1/2 [00:01<00:01,  1.00s/it, avr_loss=0.2]")
    sys.stderr.flush()
    if os.environ.get("FAKE_SKY_HANG"):
        time.sleep(600)
"""


def _spec(tmp_path: Path, **changes: object) -> LaunchSpec:
    run_dir = tmp_path / "runs" / "r1"
    steps = [
        Step("cache_latents", ["python", "cache_latents.py", "--dataset_config", HOSTILE], {}, "/"),
        Step("train", ["accelerate", "launch", "train.py", "--output_dir", HOSTILE],
             {"NOTE": "a value; with $(spaces)"}, "/"),
    ]  # fmt: skip
    values: dict[str, object] = {
        "run_id": "r1",
        "run_dir": run_dir,
        "steps": steps,
        "executor": "skypilot",
        "container": CONTAINER,
        "gpus": 2,
        "pass_env": ["HF_TOKEN"],
        "skip_steps": [],
    }
    values.update(changes)
    return LaunchSpec(**values)  # type: ignore[arg-type]


def test_task_content(tmp_path: Path) -> None:
    task = sky_task(
        _spec(tmp_path), accelerator="L40S", output_bucket="s3://bucket/kura", setup="pip list"
    )
    assert task["name"] == "kura-r1"
    assert task["resources"] == {
        "accelerators": "L40S:2",
        "image_id": "docker:ghcr.io/example/musubi:0.3.4",
    }
    assert task["file_mounts"] == {
        "/workspace/dataset": HOSTILE_MOUNT,
        "/workspace/models": "/models",
        "/workspace/output": {"source": "s3://bucket/kura/output", "mode": "MOUNT"},
    }
    assert task["envs"] == {"HF_HUB_ENABLE_HF_TRANSFER": "1"}
    assert task["secrets"] == {"HF_TOKEN": None}
    assert task["setup"] == "pip list\n"
    assert task["run"].startswith("set -euo pipefail\nkura_manifest() {\n")


def test_cloud_settings_become_resources(tmp_path: Path) -> None:
    settings = SkyPilotSettings(cloud="gcp", region="us-central1", use_spot=True, disk_size_gb=300)
    task = sky_task(
        _spec(tmp_path), accelerator="H100", output_bucket="gs://b/r1", settings=settings
    )
    assert task["resources"] == {
        "accelerators": "H100:2",
        "cloud": "gcp",
        "region": "us-central1",
        "use_spot": True,
        "disk_size": 300,
        "image_id": "docker:ghcr.io/example/musubi:0.3.4",
    }


def test_two_writable_mounts_never_share_a_bucket_folder(tmp_path: Path) -> None:
    container = ContainerSpec(
        image="img",
        gpus="all",
        mounts=(
            Mount(source="/r/a/out", target="/a/out", read_only=False, purpose="test"),
            Mount(source="/r/b/out", target="/b/out", read_only=False, purpose="test"),
        ),
        env={},
        workdir="/app",
    )
    with pytest.raises(UsageError, match="share the bucket folder"):
        sky_task(_spec(tmp_path, container=container), accelerator="A100", output_bucket="s3://b")


def test_the_job_writes_a_manifest_of_each_writable_mount_even_when_a_step_fails(
    tmp_path: Path,
) -> None:
    """Run the script with bash, the writable mount a local folder: the EXIT trap writes
    sha256sum lines of every file, and the script still exits with the step's status."""
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "a b.safetensors").write_bytes(b"lora")
    container = ContainerSpec(
        image="img",
        gpus="all",
        mounts=(Mount(source=str(out), target=str(out), read_only=False, purpose="test"),),
        env={},
        workdir=str(tmp_path),
    )
    step = Step("train", ["false"], {}, "/")
    spec = _spec(tmp_path, steps=[step], container=container)
    result = subprocess.run(["bash", "-c", run_script(spec)], capture_output=True, text=True)
    assert result.returncode == 1
    digest = hashlib.sha256(b"lora").hexdigest()
    assert (out / ".kura-sha256").read_text() == f"{digest}  ./sub/a b.safetensors\n"


def test_written_yaml_round_trips_and_holds_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value_123")
    spec = _spec(tmp_path)
    path = SkyPilotExecutor(accelerator="H100", output_bucket="gs://b/k").write_task(spec)
    assert path == spec.run_dir / "sky-task.yaml"
    text = path.read_text()
    assert "hf_secret_value_123" not in text
    loaded = load_yaml(path)
    assert loaded["file_mounts"]["/workspace/dataset"] == HOSTILE_MOUNT
    assert loaded["secrets"] == {"HF_TOKEN": None}
    assert loaded["run"] == run_script(spec)


def test_hostile_paths_stay_single_words(tmp_path: Path) -> None:
    """Run the generated script with bash: each argv must come back exactly."""
    hostile_dir = tmp_path / 'it\'s $(id) `x` "q"; &&'
    hostile_dir.mkdir()
    echo = [
        sys.executable,
        "-c",
        "import json, os, sys; "
        "print(json.dumps([os.getcwd(), os.environ.get('NOTE')] + sys.argv[1:]))",
    ]
    step = Step("train", [*echo, HOSTILE, "$HOME", "a b"], {"NOTE": "v; $(id)"}, str(hostile_dir))
    spec = _spec(tmp_path, steps=[step], container=None)
    result = subprocess.run(
        ["bash", "-c", run_script(spec)], capture_output=True, text=True, check=True
    )
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('["')]
    assert lines == [[str(hostile_dir), "v; $(id)", HOSTILE, "$HOME", "a b"]]


def test_skipped_steps_are_left_out(tmp_path: Path) -> None:
    script = run_script(_spec(tmp_path, skip_steps=["cache_latents"]))
    assert "cache_latents.py" not in script
    assert "train.py" in script


def test_writable_mount_needs_a_bucket(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="bucket"):
        sky_task(_spec(tmp_path), accelerator="A100")


def test_dollar_in_mount_path_is_refused(tmp_path: Path) -> None:
    container = ContainerSpec(
        image="img",
        gpus="all",
        mounts=(Mount(source="/data/$HOME", target="/d", read_only=True, purpose="test"),),
        env={},
        workdir="/app",
    )
    with pytest.raises(UsageError, match=r"\$"):
        sky_task(_spec(tmp_path, container=container), accelerator="A100")


def test_launch_argv(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    assert sky_launch_argv(spec, Path("/r/sky-task.yaml")) == [
        "sky", "jobs", "launch", "-n", "kura-r1", "-y", "--secret", "HF_TOKEN", "/r/sky-task.yaml",
    ]  # fmt: skip


def test_sky_missing_is_unsupported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_TOKEN", "x")
    with pytest.raises(Unsupported) as caught:
        SkyPilotExecutor(accelerator="A10G", output_bucket="s3://b").submit(_spec(tmp_path))
    assert "pip install skypilot" in caught.value.hint


@pytest.fixture
def fake_sky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "sky"
    script.write_text(FAKE_SKY.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    record = tmp_path / "sky-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SKY_RECORD", str(record))
    return record


def _calls(record: Path) -> list[list[str]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def test_launch_through_fake_sky(tmp_path: Path, fake_sky: Path) -> None:
    spec = make_spec(tmp_path, executor="skypilot")
    state = launch(spec, foreground=True, executor=SkyPilotExecutor(accelerator="A10G"))
    assert state.status == "succeeded"
    assert state.sky_job == "kura-run1"
    assert [s.name for s in state.steps] == ["sky_job"]
    task = spec.run_dir / "sky-task.yaml"
    assert _calls(fake_sky) == [["jobs", "launch", "-n", "kura-run1", "-y", str(task)]]
    assert load_yaml(task)["resources"]["accelerators"] == "A10G:1"
    assert "avr_loss=0.2" in step_log(spec.run_dir).read_text()


def test_cancel_cancels_the_managed_job(
    tmp_path: Path, fake_sky: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SKY_HANG", "1")
    spec = make_spec(tmp_path, executor="skypilot")
    launch(spec, executor=SkyPilotExecutor(accelerator="A10G"))
    wait_until(lambda: read_state(spec.run_dir).status == "training")
    state = cancel_run(spec.run_dir, grace=3)
    assert state.status == "cancelled"
    assert ["jobs", "cancel", "--yes", "--name", "kura-run1"] in _calls(fake_sky)
