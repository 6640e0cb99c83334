"""Every SkyPilot task Kura writes, loaded by SkyPilot's own ``sky.Task.from_yaml`` (with its
``sky.Resources`` and ``sky.data.Storage``) in SkyPilot's environment, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_helpers import make_spec
from test_skypilot_executor import HOSTILE_MOUNT, _spec
from tests.execution.skypilot_own_code import load_with_skypilot

from kura.execution import SkyPilotExecutor
from kura.spec.cloud import SkyPilotSettings
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
