"""The recipe AI-Toolkit runs, read back from the compiled job file (``Backend.recipe``):
what plan.md shows, and where it departs from run.yaml's intent."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from tests.builders import character_workspace

from kura.backends.registry import get_backend
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.runs.store import load_run
from kura.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return character_workspace(tmp_path)


def _plan(ws: Workspace, base: str, *sets: str) -> tuple[str, dict]:
    run_id = create_run(
        ws, datasets=["myaku"], base=base, sets=list(sets), now=datetime(2026, 12, 1, 9, 0)
    ).run_id
    plan_run(ws, run_id, gpu="h200")
    return run_id, json.loads((ws.run_dir(run_id) / "plan.json").read_text())["recipe"]


def test_the_default_draft_runs_ai_toolkits_own_recipe(ws: Workspace) -> None:
    _, recipe = _plan(ws, "aitk-qwen-image")
    items = {item["item"]: item for item in recipe["items"]}
    assert recipe["differences"] == []
    assert items["length"]["runs"] == "2000 optimizer steps"  # its Qwen-Image example job
    assert items["network"]["values"] == {
        "type": "lora",
        "linear": 16,
        "linear_alpha": None,
        "peft": True,
    }
    assert items["optimizer"]["values"]["optimizer_params"] == {"weight_decay": 0.0001}
    assert items["timesteps"]["values"] == {"timestep_type": "weighted"}
    assert recipe["lora_scale"] == 1.0


def test_peft_ignores_alpha_and_the_plan_says_so(ws: Workspace) -> None:
    run_id, recipe = _plan(ws, "aitk-flux2-klein-base-9b", "training.network.alpha=8")
    assert recipe["differences"] == ["network"]
    (network,) = [i for i in recipe["items"] if i["item"] == "network"]
    assert network["differs"] == (
        "AI-Toolkit trains in PEFT format, which ignores alpha: the LoRA scale is 1, not 0.25"
    )
    plan = (ws.run_dir(run_id) / "plan.md").read_text()
    assert "- network: run.yaml asks rank 32, alpha 8 (scale 0.25); AI-Toolkit trains" in plan
    document = json.loads((ws.run_dir(run_id) / "plan.json").read_text())
    assert document["estimate"]["lora"]["scale"] == 1.0
    assert document["estimate"]["lora"]["scale_asked"] == 0.25


def test_a_warm_up_becomes_constant_with_warmup_and_the_plan_says_so(ws: Workspace) -> None:
    _, recipe = _plan(ws, "aitk-zimage-base", "training.warmup_steps=50")
    (schedule,) = [i for i in recipe["items"] if i["item"] == "schedule"]
    assert schedule["runs"] == "constant_with_warmup, 50 warm-up steps"
    assert schedule["differs"] == "AI-Toolkit warms up only with constant_with_warmup"


def test_epochs_become_steps_in_the_read_back(ws: Workspace) -> None:
    run_id, recipe = _plan(ws, "sdxl-base-1.0", "training.epochs=4", "training.max_steps=null")
    (length,) = [i for i in recipe["items"] if i["item"] == "length"]
    spec, _ = load_run(ws, run_id)
    assert spec.training.epochs == 4
    assert length["values"]["steps"] == recipe["total_steps"]
    assert length["runs"].startswith(f"{recipe['total_steps']} optimizer steps (AI-Toolkit counts")
    assert length["differs"] is None


def test_its_loss_labels_name_its_own_files() -> None:
    labels = get_backend("ai-toolkit").loss_labels()
    assert "loss_log.db" in labels.raw and "raw loss" in labels.loss
    assert "TensorBoard" not in labels.raw + labels.loss


@pytest.mark.parametrize(
    ("network", "peft", "scale"),
    [
        # lora_special.py:422-433: PEFT format sets alpha = rank for every type, LoKr too
        ({"type": "lokr", "linear": 16, "linear_alpha": 4.0}, True, 1.0),
        ({"type": "dora", "linear": 16}, True, 1.0),
        # a UNet keeps alpha / rank (lora_special.py:115-116, DoRA.py:65-66)
        ({"type": "lora", "linear": 32, "linear_alpha": 16.0}, False, 0.5),
        ({"type": "locon", "linear": 32, "linear_alpha": 8.0}, False, 0.25),
        ({"type": "lora", "linear": 32}, False, 1 / 32),  # NetworkConfig's linear_alpha 1.0
    ],
)
def test_the_scale_shown_is_the_one_ai_toolkit_applies(
    network: dict[str, object], peft: bool, scale: float
) -> None:
    from kura.backends.aitoolkit.recipe import _scale

    assert _scale(network, peft) == pytest.approx(scale)


def test_a_lokr_plan_on_a_transformer_shows_scale_one(ws: Workspace) -> None:
    _, recipe = _plan(
        ws, "aitk-zimage-base", "backend.config.network_type=lokr", "training.network.alpha=4"
    )
    assert recipe["lora_scale"] == 1.0
    (network,) = [i for i in recipe["items"] if i["item"] == "network"]
    assert network["values"]["linear_alpha"] is None
    assert "ignores alpha" in network["differs"]


def test_the_plan_shows_the_sample_settings_the_job_writes(ws: Workspace) -> None:
    _, recipe = _plan(
        ws,
        "aitk-qwen-image",
        'training.sample_prompts=["myaku smiling"]',
        "training.sample_every_n_epochs=2",
    )
    (sampling,) = [i for i in recipe["items"] if i["item"] == "sampling"]
    assert sampling["values"] == {
        "guidance_scale": 3.0,
        "sample_steps": 25,
        "neg": "",
        "control_images": 0,
    }
    assert "guidance 3, 25 steps, no negative prompt" in sampling["runs"]
    assert "train_lora_qwen_image_24gb.yaml:91-92" in sampling["runs"]


def test_a_video_recipe_says_how_ai_toolkit_makes_each_clip() -> None:
    from kura.backends.aitoolkit.recipe import _clips

    (clips,) = _clips({"datasets": [{"num_frames": 33}, {"num_frames": 1}]})
    assert clips.values == {"num_frames": [33], "shrink_video_to_frames": True}
    assert "one clip of 33 frames" in clips.runs and "over the whole video" in clips.runs
    assert _clips({"datasets": [{"resolution": 1024}]}) == ()  # images: nothing to say
