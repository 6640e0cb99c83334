"""``kura run new --backend ai-toolkit`` refuses what compile would refuse (issue 22 item 4):
the draft goes through the same rules (``aitoolkit.compile.check_run``) before it is
written, instead of being discovered at ``kura run plan``."""

from __future__ import annotations

from datetime import datetime

import pytest

from kura.errors import SpecError, Unsupported
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace


def _new(ws: Workspace, base: str, *sets: str) -> str:
    return create_run(
        ws,
        datasets=["myaku"],
        base=base,
        backend="ai-toolkit",
        sets=list(sets),
        now=datetime(2026, 12, 2, 9, 0),
    ).run_id


def test_another_trainers_bundle_is_refused_naming_the_aitk_bundle_of_that_model(
    ws: Workspace,
) -> None:
    with pytest.raises(SpecError, match="laid out for another trainer") as caught:
        _new(ws, "wan2.1-t2v-14b")
    assert (caught.value.hint or "").startswith(
        "set model.base to aitk-wan2.1-t2v-14b (ai-toolkit's bundle closest to it;"
    )
    assert not list(ws.runs_dir.glob("*/run.yaml"))


def test_an_aitk_bundle_given_to_musubi_names_musubis_bundle_of_that_model(
    ws: Workspace,
) -> None:
    """It said "has no estimator model in the bundle table", from deep in Musubi's sizing."""
    with pytest.raises(SpecError, match="laid out for another trainer") as caught:
        create_run(
            ws,
            datasets=["myaku"],
            base="aitk-qwen-image",
            backend="musubi-tuner",
            now=datetime(2026, 12, 2, 9, 0),
        )
    assert (caught.value.hint or "").startswith("set model.base to qwen-image (")
    assert not list(ws.runs_dir.glob("*/run.yaml"))


@pytest.mark.parametrize(
    ("setting", "refusal"),
    [
        ("backend.config.network_type=locon", "locon trains nothing"),  # no module on a DiT
        ('training.optimizer_args=["betas=[0.9"]', "not a Python literal"),
        ("backend.config.layer_offloading_transformer_percent=0.5", "ignores layer_offloading"),
        ('training.sample_prompts=["myaku --ctrl_img /x.png"]', "does not read a control"),
    ],
)
def test_a_setting_compile_refuses_is_refused_by_run_new(
    ws: Workspace, setting: str, refusal: str
) -> None:
    with pytest.raises((SpecError, Unsupported), match=refusal):
        _new(ws, "chroma1-base", setting, "training.sample_every_n_epochs=2")
    assert not list(ws.runs_dir.glob("*/run.yaml"))


def test_text_encoder_offloading_alone_plans(ws: Workspace) -> None:
    """It crashed plan with a pydantic error (the transformer percent 0 was refused)."""
    run_id = _new(ws, "aitk-qwen-image", "backend.config.layer_offloading_text_encoder_percent=0.5")
    plan_run(ws, run_id, gpu="h200")
    job = (ws.run_dir(run_id) / "compiled" / "aitk-job.yaml").read_text()
    assert "layer_offloading_transformer_percent: 0.0" in job
    assert "layer_offloading_text_encoder_percent: 0.5" in job


def test_a_drafted_prompt_the_trainer_cannot_sample_is_dropped_saying_why(ws: Workspace) -> None:
    """SDXL cannot sample after caching its text embeddings (the drafted default): the
    character run gets no drafted prompts instead of a run that stops at its first sample."""
    from kura.runs.store import load_run

    run_id = _new(ws, "sdxl-base-1.0")
    spec, _ = load_run(ws, run_id)
    assert spec.training.sample_prompts == []
    why = spec.provenance["training.sample_prompts"]
    assert why.startswith("not drafted: AI-Toolkit") and "cache_text_embeddings" in why


def test_a_whole_repository_download_is_named_without_a_file(ws: Workspace) -> None:
    """AI-Toolkit loads a diffusers repository, not one file: plan.md said `…/None`."""
    run_id = _new(ws, "aitk-qwen-image")
    plan_run(ws, run_id, gpu="h200")
    plan = (ws.run_dir(run_id) / "plan.md").read_text()
    assert "pending download: Qwen/Qwen-Image (" in plan
    assert "/None" not in plan
