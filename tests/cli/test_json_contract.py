"""Every command's --json output is one document with a "kind" (the contract agents rely on)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image


def strict_json(text: str) -> Any:
    """Parse as standard JSON: ``NaN``/``Infinity`` (which Python writes by default) fail."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def filled(kura, workspace: Path, tmp_path: Path) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    for index in range(3):
        Image.new("RGB", (640, 640), (70 * index, 90, 40)).save(source / f"{index}.png")
        (source / f"{index}.txt").write_text(f"myaku, item {index}\n")
    assert kura("-w", workspace, "dataset", "add", "myaku", source).exit_code == 0
    return workspace


def test_commands_answer_with_their_kind(kura, filled: Path) -> None:
    ws = ["-w", str(filled)]
    new = kura(*ws, "run", "new", "--dataset", "myaku", "--base", "zimage-base", "--json")
    assert new.exit_code == 0, new.stdout
    run_id = new.json()["run"]
    expectations = [
        (["dataset", "list"], "dataset-list"),
        (["dataset", "inspect", "myaku"], "dataset-inspection"),
        (["model", "bundles"], "model-bundles"),
        (["knowledge", "show", "zimage", "--backend", "musubi-tuner"], "knowledge-card"),
        (["gpus"], "gpus"),
        (["estimate", "--base", "zimage-base", "--gpu", "rtx-4090"], "run-estimate"),
        (["run", "compile", run_id], "run-compile"),
        (["run", "estimate", run_id, "--gpu", "l40s"], "run-estimate"),
        (["run", "plan", run_id, "--gpu", "l40s"], "run-plan"),
        (["run", "approve", run_id], "run-approval"),
        (["run", "status", run_id], "run-status"),
        (["run", "list"], "run-list"),
        (["image", "build", "musubi"], "image-build"),
        (["schema", "run"], "schema"),
    ]
    for argv, kind in expectations:
        result = kura(*ws, *argv, "--json")
        assert result.exit_code == 0, (argv, result.stdout, result.stderr[-500:])
        assert strict_json(result.stdout)["kind"] == kind, argv
    never_ran = kura(*ws, "run", "evaluate", run_id, "--rating", "3", "--json")
    assert never_ran.exit_code == 9 and never_ran.json()["error"]["type"] == "state-conflict"


def test_estimate_calculator_without_a_gpu_gives_no_verdict(kura) -> None:
    result = kura("estimate", "--base", "flux2-klein-base-9b", "--resolution", "768x1024", "--json")
    document = result.json()
    assert document["fits"] is None
    assert document["peak_vram_gib"] > 0
    assert set(document["breakdown"]) >= {"weights", "lora_and_optimizer", "activations"}


def test_estimate_calculator_refuses_what_musubi_refuses(kura) -> None:
    result = kura(
        "estimate",
        "--base",
        "zimage-base",
        "--set",
        "backend.config.blocks_to_swap=4",
        "--set",
        "backend.config.block_swap_h2d_only=true",
        "--set",
        "backend.config.gradient_checkpointing=false",
        "--json",
    )
    assert result.exit_code != 0
    assert "checkpointing" in result.json()["error"]["message"]


def test_a_lora_alpha_of_nan_is_null_in_model_check(kura, tmp_path: Path) -> None:
    from kura.models.layouts import write_sparse_safetensors

    path = write_sparse_safetensors(
        tmp_path / "lora.safetensors",
        {
            "lora_unet_double_blocks_0_img_attn_qkv.lora_down.weight": ("BF16", [16, 3072]),
            "lora_unet_double_blocks_0_img_attn_qkv.lora_up.weight": ("BF16", [9216, 16]),
            "lora_unet_double_blocks_0_img_attn_qkv.alpha": ("BF16", []),
        },
        {"ss_network_alpha": "NaN"},
    )
    result = kura("model", "check", path, "--json")
    document = strict_json(result.stdout)
    assert "NaN" not in result.stdout
    assert document["kind"] == "model-check"


def test_documents_with_a_next_action_say_what_to_run(kura, filled: Path) -> None:
    """The agent contract: ``next`` is a list of ``{command, why}`` on every document whose
    command has a natural follow-up."""
    ws = ["-w", str(filled)]
    run_id = kura(*ws, "run", "new", "--dataset", "myaku", "--base", "zimage-base", "--json")
    run_id = run_id.json()["run"]
    commands = [
        ["run", "new", "--dataset", "myaku", "--base", "zimage-base"],
        ["dataset", "validate", "myaku"],
        ["model", "resolve", "zimage-base"],
        ["run", "plan", run_id, "--gpu", "l40s"],
        ["run", "approve", run_id],
        ["run", "status", run_id],
    ]
    for argv in commands:
        result = kura(*ws, *argv, "--json")
        steps = strict_json(result.stdout).get("next")
        assert isinstance(steps, list) and steps, argv
        assert all(set(step) == {"command", "why"} for step in steps), argv
        assert all(step["command"].startswith("kura ") for step in steps), argv
