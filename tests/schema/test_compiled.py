"""One step, mount and container type from the backend to the supervisor: what a backend's
``compile`` returns is what ``compiled/*.json`` and ``launch.json`` hold and read back, with
no converter between them; a launch.json written before the types were one still reads."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

import kura.backends.base as seam
import kura.execution.launch_spec as launch_spec
import kura.schema.compiled as compiled
from kura.errors import InvalidInput
from kura.execution.launch_spec import LaunchRecord, LaunchSpec, load_launch_record
from kura.schema.machine import machine_text, read_machine_file

STEP = compiled.Step("train", ("python", "train.py"), {"A": "1"}, "/run", kind="train")
CONTAINER = compiled.ContainerSpec(
    image="kura/musubi-tuner:0.3.4",
    gpus=1,
    workdir="/opt/musubi",
    mounts=(compiled.Mount("/kura/run", False, "run folder", source="/host/run"),),
    env={"HF_HOME": "/opt/hf"},
)

# What `kura run launch` wrote before the types were one (spec/launch.py's LaunchStep,
# LaunchMount and LaunchContainer): the same keys, in the old classes' order.
OLD_LAUNCH_JSON = {
    "backend": "musubi-tuner",
    "backend_config": {"blocks_to_swap": 0},
    "options": {"user": "1000:1000"},
    "spec": {
        "run_id": "r1",
        "run_dir": "/host/run",
        "steps": [
            {
                "name": "train",
                "argv": ["python", "train.py"],
                "env": {"A": "1"},
                "cwd": "/run",
                "kind": "train",
                "generated": True,
            }
        ],
        "executor": "docker",
        "container": {
            "image": "kura/musubi-tuner:0.3.4",
            "gpus": 1,
            "workdir": "/opt/musubi",
            "mounts": [
                {
                    "target": "/kura/run",
                    "read_only": False,
                    "purpose": "run folder",
                    "source": "/host/run",
                    "baked": False,
                }
            ],
            "env": {"HF_HOME": "/opt/hf"},
        },
        "gpus": 1,
        "pass_env": [],
        "skip_steps": [],
    },
}


def test_the_seam_and_the_files_share_one_type_per_concept() -> None:
    assert seam.Step is compiled.Step is launch_spec.Step
    assert seam.Mount is compiled.Mount is launch_spec.Mount
    assert seam.ContainerSpec is compiled.ContainerSpec is launch_spec.ContainerSpec


def test_a_launch_json_written_before_the_types_were_one_reads_back(tmp_path: Path) -> None:
    (tmp_path / "launch.json").write_text(json.dumps(OLD_LAUNCH_JSON, indent=2))
    record = load_launch_record(tmp_path)
    assert record.spec.steps == [STEP]
    assert record.spec.container == CONTAINER
    assert record.backend_config == {"blocks_to_swap": 0}


def test_launch_json_round_trips_the_seam_values(tmp_path: Path) -> None:
    spec = LaunchSpec("r1", tmp_path, [STEP], "docker", CONTAINER, 1, [], [])
    launch_spec.save_launch_record(LaunchRecord(spec, {"blocks_to_swap": 0}, {}))
    written = json.loads((tmp_path / "launch.json").read_text())
    assert written["spec"]["steps"] == OLD_LAUNCH_JSON["spec"]["steps"]  # type: ignore[index]
    assert written["spec"]["container"] == OLD_LAUNCH_JSON["spec"]["container"]  # type: ignore[index]
    assert load_launch_record(tmp_path).spec == spec


def test_container_json_is_the_container_spec_itself(tmp_path: Path) -> None:
    path = tmp_path / "container.json"
    path.write_text(machine_text(CONTAINER))
    assert read_machine_file(compiled.ContainerSpec, path, remedy="plan") == CONTAINER


def test_a_hand_edit_of_a_step_is_refused_naming_the_key(tmp_path: Path) -> None:
    document = json.loads(json.dumps(OLD_LAUNCH_JSON))
    document["spec"]["steps"][0]["argv"] = ["python", 3]
    (tmp_path / "launch.json").write_text(json.dumps(document))
    with pytest.raises(InvalidInput, match=r"spec\.steps\.0\.argv"):
        load_launch_record(tmp_path)


def test_a_backend_building_a_bad_step_is_stopped_where_it_builds_it() -> None:
    """The seam's values validate when made, as the files do when read: a Path in an argv
    (not a string) or an unknown kind fails in the backend's compile, not in the supervisor."""
    with pytest.raises(ValidationError):
        compiled.Step("train", (Path("python"),), {}, "/run")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        replace(STEP, kind="warmup")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        compiled.Step("train", (), {}, "/run")


def test_launch_json_is_the_launch_record_itself(tmp_path: Path) -> None:
    """One type per file: what the executor hands over is what launch.json's reader returns
    (no entry model and converter beside it), and the catalog names that same type."""
    from kura.schema import launch
    from kura.schema.catalog import SCHEMAS

    assert launch_spec.LaunchRecord is launch.LaunchRecord
    assert launch_spec.LaunchSpec is launch.LaunchSpec
    assert SCHEMAS["launch"][0] == "kura.schema.launch:LaunchRecord"
    spec = LaunchSpec("r1", tmp_path, [STEP], "host", None, 2, ["HF_TOKEN"], ["cache_latents"])
    record = LaunchRecord(spec, {"blocks_to_swap": 4}, {"docker_user": "1000:1000"}, "ai-toolkit")
    launch_spec.save_launch_record(record)
    assert load_launch_record(tmp_path) == record


def test_an_executor_building_a_bad_launch_spec_is_stopped_where_it_builds_it(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValidationError):
        LaunchSpec("r1", tmp_path, [STEP], "podman", None, 1, [], [])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        LaunchSpec("r1", tmp_path, [STEP], "host", None, 0, [], [])
    with pytest.raises(ValidationError):
        LaunchSpec("r1", tmp_path, [STEP], "host", None, "1", [], [])  # type: ignore[arg-type]


def test_a_hand_edited_gpu_count_in_launch_json_is_refused_naming_the_key(
    tmp_path: Path,
) -> None:
    document = json.loads(json.dumps(OLD_LAUNCH_JSON))
    document["spec"]["gpus"] = "2"
    (tmp_path / "launch.json").write_text(json.dumps(document))
    with pytest.raises(InvalidInput, match=r"spec\.gpus"):
        load_launch_record(tmp_path)
