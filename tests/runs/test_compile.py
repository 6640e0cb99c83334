from __future__ import annotations

import json
import tomllib
from datetime import datetime
from pathlib import Path

import pytest

from kura.errors import SpecError
from kura.runs.compile import compile_in_workspace
from kura.runs.new import create_run
from kura.workspace import Workspace

NOW = datetime(2026, 11, 30, 10, 42)


@pytest.fixture
def run_id(ws: Workspace) -> str:
    return create_run(ws, datasets=["myaku"], base="flux2-klein-base-9b", now=NOW).run_id


def test_compile_writes_toml_steps_container_and_lock(ws: Workspace, run_id: str) -> None:
    report = compile_in_workspace(ws, run_id).to_dict()
    assert report["kind"] == "run-compile"
    folder = ws.run_dir(run_id) / "compiled"
    assert sorted(p.name for p in folder.iterdir()) == [
        "container.json",
        "dataset.toml",
        "run.lock",
        "sample_prompts.txt",  # a character run samples by default (prompts from its captions)
        "steps.json",
    ]
    toml = tomllib.loads((folder / "dataset.toml").read_text())
    assert toml["datasets"][0]["image_directory"] == "/kura/data/myaku"
    assert [s["name"] for s in report["steps"]] == ["cache_latents", "cache_text_encoder", "train"]
    train = report["steps"][-1]["argv"]
    assert train[:2] == ["accelerate", "launch"]
    assert train[train.index("--model_version") + 1] == "klein-base-9b"
    assert "--gradient_checkpointing" not in train


def test_container_mounts_have_host_sides(ws: Workspace, run_id: str) -> None:
    container = compile_in_workspace(ws, run_id).container
    assert container is not None
    by_target = {m["target"]: m for m in container["mounts"]}
    dataset = by_target["/kura/data/myaku"]
    assert dataset["read_only"] and dataset["source"] == str(ws.dataset_dir("myaku") / "media")
    assert by_target["/kura/run/output"]["source"] == str(ws.run_dir(run_id) / "output")
    assert not by_target["/kura/run/output"]["read_only"]


def test_missing_models_are_pending_in_the_lock(ws: Workspace, run_id: str) -> None:
    report = compile_in_workspace(ws, run_id)
    roles = report.lock["models"]["roles"]
    assert {slot: r["sha256"] for slot, r in roles.items()} == {
        "dit": "pending",
        "text_encoder": "pending",
        "vae": "pending",
    }
    assert {c["check"]: c["status"] for c in report.checks}["dataset myaku"] == "ok"


def test_compiling_twice_is_byte_identical_and_reports_no_change(
    ws: Workspace, run_id: str
) -> None:
    compile_in_workspace(ws, run_id)
    folder = ws.run_dir(run_id) / "compiled"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    again = compile_in_workspace(ws, run_id)
    assert not again.changed
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    steps = json.loads(before["steps.json"])
    assert (steps["backend"], steps["release"]) == ("musubi-tuner", "0.3.4")


def test_host_executor_needs_the_musubi_environment(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host executor runs Musubi's own environment (``kura backend install musubi``):
    its python and accelerate by full path, in the checkout its kura-env.json names."""
    from kura.backends.musubi.env import env_record
    from kura.backends.trainer_env import EnvLocation, write_env_record

    monkeypatch.setenv("KURA_MUSUBI_ENV", str(tmp_path / "env"))
    run = create_run(
        ws,
        datasets=["myaku"],
        base="flux2-klein-base-9b",
        sets=["execution.executor=host"],
        now=NOW,
    ).run_id
    with pytest.raises(SpecError, match="no Musubi Tuner environment is installed"):
        compile_in_workspace(ws, run)
    checkout = tmp_path / "musubi"
    (checkout / "src" / "musubi_tuner").mkdir(parents=True)
    python = tmp_path / "env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    location = EnvLocation(tmp_path / "env", "test")
    with pytest.raises(SpecError, match=r"has no kura-env\.json"):
        compile_in_workspace(ws, run)
    write_env_record(location, env_record(checkout))
    report = compile_in_workspace(ws, run)
    assert report.container is None
    assert {step["cwd"] for step in report.steps} == {str(checkout)}
    first, *_, train = report.steps
    assert first["argv"][:2] == [str(python), "src/musubi_tuner/flux_2_cache_latents.py"]
    assert train["argv"][0] == str(location.tool("accelerate"))
    assert train["env"]["TRANSFORMERS_OFFLINE"] == "1"
    media = str(ws.dataset_dir("myaku") / "media")
    toml = tomllib.loads((ws.run_dir(run) / "compiled" / "dataset.toml").read_text())
    assert toml["datasets"][0]["image_directory"] == media


def test_edited_run_with_impossible_combination_is_refused(ws: Workspace, run_id: str) -> None:
    path = ws.run_dir(run_id) / "run.yaml"
    path.write_text(
        path.read_text().replace(
            "    gradient_checkpointing: false\n",
            "    gradient_checkpointing: false\n"
            "    block_swap_h2d_only: true\n"
            "    blocks_to_swap: 4\n",
        )
    )
    with pytest.raises(SpecError, match="gradient_checkpointing"):
        compile_in_workspace(ws, run_id)
