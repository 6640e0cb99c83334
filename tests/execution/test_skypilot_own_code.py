"""Every SkyPilot task Kura writes, loaded by SkyPilot's own ``sky.Task.from_yaml`` (with its
``sky.Resources`` and ``sky.data.Storage``) in SkyPilot's environment, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_helpers import make_spec
from test_skypilot_executor import HOSTILE_MOUNT, _spec
from tests.execution.skypilot_own_code import load_with_skypilot

from kura.execution import SkyPilotExecutor
from kura.schema.cloud import SkyPilotSettings
from kura.yamlio import load_yaml, write_yaml

PINNED = SkyPilotSettings(cloud="gcp", region="us-central1", use_spot=True, disk_size_gb=300)


def _write(tmp_path: Path, name: str, executor: SkyPilotExecutor, **changes: object) -> Path:
    spec = _spec(tmp_path / name, **changes)
    spec.run_dir.mkdir(parents=True)
    return executor.write_task(spec)


def test_every_task_kura_writes_loads_as_written(tmp_path: Path) -> None:
    pinned = _write(
        tmp_path,
        "pinned",
        SkyPilotExecutor(
            accelerator="H100", output_bucket="gs://b/kura/r1", setup="nvidia-smi", settings=PINNED
        ),
    )
    anywhere = _write(
        tmp_path, "anywhere", SkyPilotExecutor(accelerator="A100-80GB", output_bucket="s3://b/r1")
    )
    bare_spec = make_spec(tmp_path / "bare", executor="skypilot")
    bare_spec.run_dir.mkdir(parents=True, exist_ok=True)
    bare = SkyPilotExecutor(accelerator="L4").write_task(bare_spec)

    first, second, third = load_with_skypilot([pinned, anywhere, bare], tmp_path / "home")

    assert "error" not in first, first
    assert first["name"] == "kura-r1"
    assert first["accelerators"] == {"H100": 2}
    assert (first["cloud"], first["region"]) == ("GCP", "us-central1")
    assert (first["use_spot"], first["disk_size"]) == (True, 300)
    assert first["file_mounts"] == {
        "/workspace/dataset": HOSTILE_MOUNT,
        "/workspace/models": "/models",
    }
    assert first["storage_mounts"] == {
        "/workspace/output": {"source": "gs://b/kura/r1/output", "mode": "MOUNT"}
    }
    assert first["secret_refs"] == ["HF_TOKEN"]  # a name, resolved by --secret at launch
    assert first["envs"] == {"HF_HUB_ENABLE_HF_TRANSFER": "1"}
    assert first["has_run"]

    assert "error" not in second, second
    assert second["accelerators"] == {"A100-80GB": 2}
    assert (second["cloud"], second["region"], second["use_spot"]) == (None, None, False)
    assert second["storage_mounts"]["/workspace/output"]["source"] == "s3://b/r1/output"

    assert "error" not in third, third
    assert third["accelerators"] == {"L4": 1}
    assert third["storage_mounts"] == {} and third["secret_refs"] == []


@pytest.mark.parametrize(
    ("path", "value", "refusal"),
    [
        (("resources", "disk_sise"), 200, "disk_size"),
        (("file_mounts", "/workspace/output", "mode"), "MOUNTED", "MOUNT"),
        (("resources", "cloud"), "awz", "awz"),
        (("resources", "accelerators"), "H100:two", "H100:two"),
    ],
)
def test_a_key_skypilot_rejects_fails_the_check(
    tmp_path: Path, path: tuple[str, ...], value: object, refusal: str
) -> None:
    """The check is SkyPilot's: change one key of a task Kura wrote and it is refused."""
    task_path = _write(
        tmp_path, "r", SkyPilotExecutor(accelerator="H100", output_bucket="s3://b/r1")
    )
    task = load_yaml(task_path)
    node = task
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    write_yaml(task_path, task)
    [loaded] = load_with_skypilot([task_path], tmp_path / "home")
    assert "error" in loaded and refusal in loaded["error"], loaded


def test_the_job_queue_kura_reads_is_skypilots_own(tmp_path: Path) -> None:
    """The argv of :meth:`SkyPilotExecutor.cloud_job` parses with SkyPilot's own ``sky jobs
    queue`` (all jobs, verbose fields, JSON), and :func:`read_queue` reads SkyPilot's own
    ``ManagedJobRecord`` dumps: the newest record of the job's name."""
    import json
    import subprocess

    from tests.execution.skypilot_own_code import skypilot_python

    from kura.execution.cloudjob import read_queue
    from kura.execution.executors.skypilot import SkyPilotExecutor
    from kura.schema.state import RunState

    recorded: list[list[str]] = []

    def record(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        recorded.append(argv)
        return subprocess.CompletedProcess(argv, 0, "[]", "")

    state = RunState("r1", "skypilot", "host", "t", "t", sky_job="kura-r1")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("kura.execution.executors.skypilot.subprocess.run", record)
        patch.setattr("kura.execution.executors.skypilot.shutil.which", lambda _: "/bin/sky")
        assert SkyPilotExecutor.cloud_job(state) is None
    [argv] = recorded
    assert argv[:3] == ["sky", "jobs", "queue"]
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [str(skypilot_python()), str(Path(__file__).with_name("sky_queue_check.py")),
         "kura-r1", *argv[3:]],
        capture_output=True, text=True, timeout=300, check=False,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["params"]["all"] is True
    assert found["params"]["verbose"] is True
    assert found["params"]["output_format"] == "json"
    job = read_queue(found["queue"], "kura-r1")
    assert job is not None
    assert (job.job_id, job.status, job.recovery_count, job.ended) == (7, "RECOVERING", 2, False)
