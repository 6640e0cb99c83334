"""A micro-batch a person set is never half-changed by the ladder (issue 23 item 7).

The micro-batch aid lowers ``batch_size`` and raises ``gradient_accumulation_steps``
together. When a person set either, the plan keeps both (DESIGN invariant 10): the ladder
finds another aid or offers micro-batch 1 as a recipe option, never writes half of it.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from tests.builders import character_workspace

from kura.backends.musubi.estimation import person_set
from kura.runs.new import EXPLICIT_REASON, create_run
from kura.runs.plan import _person_set, plan_run
from kura.runs.store import load_run
from kura.schema.run import RunSpec
from kura.workspace import Workspace

BUNDLE = "flux2-klein-base-4b"
GPU = "rtx-5090"  # FLUX.2 klein 4B at 1024 px, batch 2: the ladder's fastest fit is micro 1


@pytest.fixture
def ws(tmp_path) -> Workspace:  # type: ignore[no-untyped-def]
    return character_workspace(tmp_path)


def _run(ws: Workspace, *sets: str, hour: int = 9) -> str:
    return create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["training.effective_batch=2", "training.sample_prompts=[]", *sets],
        now=datetime(2026, 12, 1, hour, 0),
    ).run_id


def test_the_ladder_may_split_a_micro_batch_kura_drafted(ws: Workspace) -> None:
    run_id = _edited(
        ws, {"batch_size": "adapter default (x)", "gradient_accumulation_steps": "adapter default"}
    )
    plan_run(ws, run_id, gpu=GPU)
    spec, _ = load_run(ws, run_id)
    assert (
        spec.backend.config["batch_size"],
        spec.backend.config["gradient_accumulation_steps"],
    ) == (1, 2)


def _edited(ws: Workspace, reasons: dict[str, str]) -> str:
    from kura.yamlio import write_yaml

    run_id = _run(ws)
    _, document = load_run(ws, run_id)
    document["backend"]["config"].update(batch_size=2, gradient_accumulation_steps=1)
    document["backend"]["reasons"].update(reasons)
    write_yaml(ws.run_dir(run_id) / "run.yaml", document)
    return run_id


@pytest.mark.parametrize(
    "reasons",
    [
        # batch_size edited by hand, the accumulation left as Kura drafted it (the case)
        {"batch_size": "two fit my data", "gradient_accumulation_steps": "adapter default (x)"},
        {"batch_size": EXPLICIT_REASON},
    ],
)
def test_a_person_set_micro_batch_is_kept_whole_and_plans_the_same_twice(
    ws: Workspace, reasons: dict[str, str]
) -> None:
    run_id = _edited(ws, reasons)
    first = plan_run(ws, run_id, gpu=GPU).to_dict()
    spec, _ = load_run(ws, run_id)
    config = spec.backend.config
    assert (config["batch_size"], config["gradient_accumulation_steps"]) == (2, 1)
    assert (
        "batch_size" not in first["applied"]
        and "gradient_accumulation_steps" not in (first["applied"])
    )
    assert all(rung["aid"] != "micro-batch" for rung in first["fit"]["rungs"])
    again = plan_run(ws, run_id, gpu=GPU).to_dict()  # no accumulation doubling per plan
    assert again["applied"] == {} and again["fits"] == first["fits"]
    spec, _ = load_run(ws, run_id)
    assert spec.backend.config["gradient_accumulation_steps"] == 1


@pytest.mark.parametrize(
    ("reason", "provenance", "mine"),
    [
        (None, None, False),
        ("fit ladder: fp8", None, False),
        ("adapter default (docs)", None, False),
        (EXPLICIT_REASON, None, True),
        ("I want it so", None, True),
        (None, "your instruction", True),
    ],
)
def test_the_backend_reads_a_persons_value_as_the_plan_does(
    reason: str | None, provenance: str | None, mine: bool
) -> None:
    document: dict = {"id": "r", "model": {"base": BUNDLE}, "datasets": [{"name": "d"}]}
    document["backend"] = {"config": {"batch_size": 2}, "reasons": {}}
    if reason is not None:
        document["backend"]["reasons"]["batch_size"] = reason
    if provenance is not None:
        document["provenance"] = {"backend.config.batch_size": provenance}
    spec = RunSpec.model_validate(document)
    assert person_set(spec, "batch_size") is _person_set(spec, "batch_size") is mine


def test_when_nothing_fits_micro_batch_1_is_offered_as_a_recipe_option_never_applied() -> None:
    """Qwen-Image at a person's batch_size 8 on a 12 GB card: no aid fits with micro-batch
    8 kept, so the plan does not fit and its first recipe option is micro-batch 1 with the
    accumulation that keeps the effective batch (both keys, together)."""
    from musubi_cases import make_spec

    from kura.backends.base import DatasetMedia, PlanInputs
    from kura.backends.musubi.backend import BACKEND
    from kura.models.bundles import get_bundle
    from kura.planning.gpus import GPU_CLASSES
    from kura.schema.dataset import DatasetSpec

    photos = DatasetSpec.model_validate(
        {
            "name": "photos",
            "media": "/data/photos",
            "facts": {
                "digest": "sha256:0",
                "inspected_at": "2026-01-01",
                "resolution": [1024, 1024],
                "counts": {"images": 20},
            },
        }
    )
    inputs = PlanInputs(
        bundle=get_bundle("qwen-image"),
        datasets={"photos": photos},
        media={"photos": DatasetMedia(images=20)},
    )
    spec = make_spec(
        {
            "model": {"base": "qwen-image"},
            "training": {"effective_batch": 8},
            "backend": {
                "config": {"batch_size": 8, "gradient_accumulation_steps": 1},
                "reasons": {"batch_size": "eight fit my data"},
            },
        }
    )
    fit = BACKEND.fit(spec, inputs, GPU_CLASSES["rtx-3060-12g"], host_ram_gib=None)
    assert not fit.fits
    assert "batch_size" not in fit.settings and "gradient_accumulation_steps" not in fit.settings
    first = fit.document["recipe_options"][0]
    assert first["option"].startswith("micro-batch 1, accumulation 8 (your batch_size 8")
    assert first["change"] == {"batch_size": 1, "gradient_accumulation_steps": 8}
    assert first["fits"]
    assert any("Your micro-batch 8 is kept" in note for note in fit.document["notes"])
