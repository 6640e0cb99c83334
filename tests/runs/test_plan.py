"""kura run plan / approve: the fit ladder writes reasons, headroom gets no aid, one gate."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from kura.errors import CheckFailed, StateConflict
from kura.runs.approval import approve_run, check_approval
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.runs.store import load_run
from kura.workspace import Workspace

MEMORY_AIDS = ("fp8_base", "fp8_scaled", "gradient_checkpointing", "blocks_to_swap")


def _run(ws: Workspace, base: str = "flux2-klein-base-4b", sets: list[str] | None = None) -> str:
    return create_run(
        ws, datasets=["myaku"], base=base, sets=sets or [], now=datetime(2026, 11, 30, 7, 0)
    ).run_id


def _aids(ws: Workspace, run_id: str) -> dict:
    spec, _ = load_run(ws, run_id)
    return {k: spec.backend.config.get(k) for k in MEMORY_AIDS if spec.backend.config.get(k)}


def test_a_gpu_with_headroom_gets_no_memory_aid(ws: Workspace) -> None:
    run_id = _run(ws)
    report = plan_run(ws, run_id, gpu="h200").to_dict()
    assert report["fits"] is True
    assert report["applied"] == {}
    assert _aids(ws, run_id) == {}
    plan = (ws.run_dir(run_id) / "plan.md").read_text()
    assert "- Memory aids: none" in plan


def test_a_tight_gpu_gets_aids_each_with_its_reason(ws: Workspace) -> None:
    run_id = _run(ws, base="qwen-image")
    report = plan_run(ws, run_id, gpu="rtx-4090").to_dict()
    assert report["fits"] is True
    aids = _aids(ws, run_id)
    assert aids, "qwen-image at 1024 px needs memory aids on 24 GB"
    spec, _ = load_run(ws, run_id)
    for key in aids:
        assert spec.backend.reasons[key].startswith("fit ladder: "), key
    assert report["estimate"]["fits"] is True
    text = (ws.run_dir(run_id) / "plan.md").read_text()
    assert len(report["fit"]["alternatives"]) > 1
    assert "## Configurations that fit" in text and "Chosen by the rule" in text


def test_an_aid_a_person_set_is_kept(ws: Workspace) -> None:
    run_id = _run(ws)
    path = ws.run_dir(run_id) / "run.yaml"
    path.write_text(
        path.read_text()
        .replace("    gradient_checkpointing: false\n", "    gradient_checkpointing: true\n")
        .replace(
            "    gradient_checkpointing: adapter default",
            "    gradient_checkpointing: I want the lower peak — adapter default",
        )
    )
    plan_run(ws, run_id, gpu="h200")
    spec, _ = load_run(ws, run_id)
    assert spec.backend.config["gradient_checkpointing"] is True


def test_a_plan_that_cannot_fit_changes_nothing_and_offers_options(ws: Workspace) -> None:
    run_id = _run(ws, base="flux2-dev")
    before = (ws.run_dir(run_id) / "run.yaml").read_text()
    report = plan_run(ws, run_id, gpu="rtx-3060-12g").to_dict()
    assert report["fits"] is False
    assert report["applied"] == {}
    assert (ws.run_dir(run_id) / "run.yaml").read_text() == before
    assert report["fit"]["recipe_options"], "recipe-touching options are presented"
    plan = (ws.run_dir(run_id) / "plan.md").read_text()
    assert "Options that change the recipe (not applied)" in plan


def test_planning_twice_gives_the_same_plan(ws: Workspace) -> None:
    run_id = _run(ws)
    plan_run(ws, run_id, gpu="rtx-4090")  # applies the ladder's aids to run.yaml
    second = plan_run(ws, run_id, gpu="rtx-4090")
    assert second.applied == {}
    assert plan_run(ws, run_id, gpu="rtx-4090").plan_digest == second.plan_digest


def test_approve_needs_a_plan_and_refuses_a_stale_one(ws: Workspace) -> None:
    run_id = _run(ws)
    with pytest.raises(StateConflict, match="no plan"):
        approve_run(ws, run_id)
    plan_run(ws, run_id, gpu="rtx-4090")
    path = ws.run_dir(run_id) / "run.yaml"
    path.write_text(path.read_text().replace("  learning_rate: 0.0001", "  learning_rate: 0.0002"))
    with pytest.raises(CheckFailed, match="changed since its plan") as info:
        approve_run(ws, run_id)
    # The way back plans for the GPU class the plan was made for, not this machine's.
    assert f"`kura run plan {run_id} --gpu rtx-4090`" in info.value.hint
    plan_run(ws, run_id, gpu="rtx-4090")
    approval = approve_run(ws, run_id)
    record = check_approval(ws, run_id)
    assert record.digest == approval.digest
    assert set(record.files) >= {
        "compiled/dataset.toml",
        "compiled/steps.json",
        "compiled/run.lock",
        "plan.md",
        "plan.json",
    }
    assert record.run_yaml["training"]["learning_rate"] == 0.0002


def test_every_field_edited_after_approval_is_named(ws: Workspace) -> None:
    run_id = _run(ws)
    plan_run(ws, run_id, gpu="rtx-4090")
    approve_run(ws, run_id)
    path = ws.run_dir(run_id) / "run.yaml"
    original = path.read_text()
    edits = {
        "training.network.rank 32 → 8": ("    rank: 32", "    rank: 8"),
        "execution.gpus 1 → 2": ("  gpus: 1", "  gpus: 2"),
        "datasets.0.repeats 1 → 3": ("    repeats: 1", "    repeats: 3"),
        "model.base 'flux2-klein-base-4b' → 'flux2-klein-4b'": (
            "  base: flux2-klein-base-4b",
            "  base: flux2-klein-4b",
        ),
    }
    for expected, (old, new) in edits.items():
        assert old in original, old
        path.write_text(original.replace(old, new))
        with pytest.raises(CheckFailed, match=r"run\.yaml changed after approval") as info:
            check_approval(ws, run_id)
        assert expected in info.value.message
    path.write_text(original)
    check_approval(ws, run_id)
    plan_json = ws.run_dir(run_id) / "plan.json"
    plan_json.write_text(json.dumps({"tampered": True}))
    with pytest.raises(CheckFailed, match=r"plan\.json"):
        check_approval(ws, run_id)


def test_fp8_is_dropped_when_checkpointing_alone_fits(ws: Workspace) -> None:
    run_id = _run(ws)
    plan_run(ws, run_id, gpu="rtx-4090")
    assert _aids(ws, run_id) == {"gradient_checkpointing": True}


def test_the_plan_shows_the_effective_lora_scale(ws: Workspace) -> None:
    run_id = _run(ws, sets=["training.network.rank=32", "training.network.alpha=8"])
    plan_run(ws, run_id, gpu="h200")
    plan = (ws.run_dir(run_id) / "plan.md").read_text()
    assert "networks.lora_flux_2, rank 32, alpha 8: LoRA scale alpha/rank = 0.25" in plan
    record = json.loads((ws.run_dir(run_id) / "plan.json").read_text())
    assert record["estimate"]["lora"] == {
        "rank": 32,
        "alpha": 8.0,
        "scale": 0.25,
        "scale_asked": 0.25,
        "scale_source": "the trainer's compiled configuration",
    }


def test_the_plan_renders_the_recipe_the_compiled_files_hold(ws: Workspace) -> None:
    """plan.md's Recipe is the trainer's compiled configuration read back through the
    backend (its argv flags here), and plan.json carries the same items."""
    run_id = _run(ws, sets=["training.scheduler=cosine", "training.warmup_steps=20"])
    plan_run(ws, run_id, gpu="h200")
    plan = (ws.run_dir(run_id) / "plan.md").read_text()
    recipe = plan[plan.index("## Recipe") : plan.index("## Accommodations")]
    assert "As musubi-tuner's compiled configuration holds it" in recipe
    assert "| schedule | cosine, 20 warm-up steps | compiled/steps.json train argv" in recipe
    assert "| length | 16 epochs = 48 optimizer steps (3 per epoch" in recipe
    assert "Every part follows run.yaml's intent." in recipe
    record = json.loads((ws.run_dir(run_id) / "plan.json").read_text())
    items = {item["item"]: item for item in record["recipe"]["items"]}
    assert list(items) == [
        "network",
        "optimizer",
        "schedule",
        "length",
        "batch",
        "precision",
        "memory",
        "timesteps",
    ]
    assert items["schedule"]["values"] == {"lr_scheduler": "cosine", "lr_warmup_steps": 20}
    assert record["recipe"]["total_steps"] == 48 and record["recipe"]["differences"] == []


def test_the_plan_says_where_the_trainer_departs_from_the_intent(ws: Workspace) -> None:
    """A person's own train command (the escape hatch) runs another length than run.yaml
    asks: the plan names the difference, from the compiled argv."""
    run_id = _run(ws)
    compiled = plan_run(ws, run_id, gpu="h200").compile
    (train,) = [s["argv"] for s in compiled["steps"] if s["name"] == "train"]
    argv = [*train]
    argv[argv.index("--max_train_epochs") + 1] = "4"
    spec = ws.run_dir(run_id) / "run.yaml"
    text = spec.read_text().replace(
        "  config:\n", "  config:\n    command: " + json.dumps(argv) + "\n", 1
    )
    spec.write_text(text)
    plan_run(ws, run_id, gpu="h200")
    plan = (ws.run_dir(run_id) / "plan.md").read_text()
    assert "- length: run.yaml asks 16 epochs; Musubi trains 4 epochs = 12 optimizer steps" in plan
    record = json.loads((ws.run_dir(run_id) / "plan.json").read_text())
    assert record["recipe"]["differences"] == ["length"]


def test_a_character_run_plans_its_drafted_sampling_step(ws: Workspace) -> None:
    run_id = _run(ws)
    report = plan_run(ws, run_id, gpu="h200").to_dict()
    steps = {step["step"]: step for step in report["estimate"]["steps"]}
    assert steps["sample"]["peak_gib"] > 0 and steps["sample"]["fits"] is True
    # Issue 12 item 9: sampling is part of the run, timed and counted in the total.
    assert steps["sample"]["seconds"] > 0
    cost = report["estimate"]["time_and_cost"]
    assert "sample" not in cost["untimed_steps"]
    assert cost["by_step_hours"]["sample"] == pytest.approx(
        steps["sample"]["seconds"] / 3600, abs=1e-3
    )
    assert cost["hours"] == pytest.approx(sum(cost["by_step_hours"].values()), abs=2e-3)
    # the drafted prompts ask for the training size (Musubi's own default would be 256 px)
    spec, _ = load_run(ws, run_id)
    width, height = spec.datasets[0].resolution
    assert all(p.endswith(f" --w {width} --h {height}") for p in spec.training.sample_prompts)
    assert any(f"largest {width}x{height}x1" in note for note in steps["sample"]["notes"])
    assert not any("sampler's default" in note for note in steps["sample"]["notes"])
    plan = (ws.run_dir(run_id) / "plan.md").read_text()
    whole = next(line for line in plan.splitlines() if "the whole run, every step" in line)
    assert "sample" in whole
    assert any(
        line.startswith("- sample: ") and "sampling point" in line for line in plan.splitlines()
    )


def test_the_plan_times_the_caching_steps_and_counts_them_in_time_and_cost(
    ws: Workspace,
) -> None:
    """Issue 11 item 7 / issue 12 item 10: caching is timed, in the total, the cost and
    the band, and plan.md names each caching step's time with its source."""
    run_id = _run(ws)
    report = plan_run(ws, run_id, gpu="h200").to_dict()
    steps = {step["step"]: step for step in report["estimate"]["steps"]}
    cost = report["estimate"]["time_and_cost"]
    assert cost["untimed_steps"] == []
    for name in ("cache_latents", "cache_text_encoder"):
        assert steps[name]["seconds"] > 0
        hours = steps[name]["seconds"] / 3600
        assert cost["by_step_hours"][name] == pytest.approx(hours, abs=1e-3)
        assert cost["band_by_step"][name] == steps[name]["seconds_band"] == 0.6
    assert cost["hours"] == pytest.approx(sum(cost["by_step_hours"].values()), abs=2e-3)
    spread = sum(h * cost["band_by_step"][k] for k, h in cost["by_step_hours"].items())
    assert cost["hours_band"][1] == pytest.approx(cost["hours"] + spread, abs=2e-3)
    plan = (ws.run_dir(run_id) / "plan.md").read_text()
    assert "not timed" not in plan
    whole = next(line for line in plan.splitlines() if "the whole run, every step" in line)
    assert "cache_latents" in whole and "cache_text_encoder" in whole
    for name in ("cache_latents", "cache_text_encoder"):
        line = next(line for line in plan.splitlines() if line.startswith(f"- {name}: about"))
        assert "±60%" in line
        assert "(source: kura.backends.musubi.estimator.steps + .cachetime" in line
