"""The fit ladder: no aid with headroom, the fewest aids that fit, honest failure."""

from __future__ import annotations

import dataclasses

import pytest

from kura.backends.musubi.estimator.config import EstimateConfig
from kura.backends.musubi.estimator.estimate import estimate
from kura.backends.musubi.fit import ASK_FIRST_SLOWDOWN, fastest_fitting
from kura.planning.gpus import get_gpu_class

LADDER_ORDER = [
    "fp8",
    "gradient-checkpointing",
    "split-attention",
    "micro-batch",
    "block-swap",
    "activation-offload",
]


@pytest.mark.parametrize(
    ("model", "gpu"),
    [("flux2-klein-9b", "h100-sxm"), ("zimage", "h200"), ("flux2-klein-4b", "rtx-a6000")],
)
def test_headroom_gets_no_memory_aid(model: str, gpu: str) -> None:
    # The recipe asks for checkpointing and fp8; with headroom the plan drops both.
    recipe = EstimateConfig.at_resolution(
        model, 1024, 1024, gradient_checkpointing="on", fp8="scaled", blocks_to_swap=2
    )
    plan = fastest_fitting(recipe, get_gpu_class(gpu))
    assert plan.fits
    assert plan.rungs == ()
    assert plan.config.gradient_checkpointing == "off"
    assert plan.config.fp8 == "none"
    assert plan.config.blocks_to_swap == 0


@pytest.mark.parametrize(
    ("model", "size", "gpu"),
    [
        ("qwen-image", (1024, 1024, 1), "rtx-4090"),
        ("qwen-image", (1024, 1024, 1), "rtx-3060-12g"),
        ("wan2.1-t2v-14b", (832, 480, 81), "rtx-4090"),
        ("flux2-dev", (1024, 1024, 1), "rtx-5090"),
        ("hunyuan-video", (1280, 720, 41), "h100-sxm"),
    ],
)
def test_tight_fits_apply_aids_in_ladder_order(
    model: str, size: tuple[int, int, int], gpu: str
) -> None:
    gpu_class = get_gpu_class(gpu)
    recipe = EstimateConfig.at_resolution(model, *size)
    plan = fastest_fitting(recipe, gpu_class)
    assert plan.fits
    assert plan.rungs
    aids = [rung.aid for rung in plan.rungs]
    assert aids == sorted(aids, key=LADDER_ORDER.index)
    for rung in plan.rungs:
        assert rung.reason
        assert rung.slowdown > 0
    # The plan's own configuration fits when estimated afresh.
    assert estimate(plan.config, gpu_class).fits
    assert plan.config.effective_batch == recipe.effective_batch
    assert plan.to_dict()["kind"] == "fit-plan"


def test_fewest_blocks_that_fit() -> None:
    gpu = get_gpu_class("rtx-3060-12g")
    plan = fastest_fitting(EstimateConfig.at_resolution("qwen-image", 1024, 1024), gpu)
    config = plan.config
    assert config.blocks_to_swap > 0
    one_less = config.replace(blocks_to_swap=config.blocks_to_swap - 1)
    assert not estimate(one_less, gpu).fits


def test_micro_batch_keeps_the_effective_batch() -> None:
    recipe = EstimateConfig.at_resolution("flux2-klein-4b", 1024, 1024, micro_batch=8)
    plan = fastest_fitting(recipe, get_gpu_class("rtx-4090"))
    assert plan.fits
    assert plan.config.effective_batch == 8


def test_does_not_fit_lists_recipe_options_and_a_bigger_gpu() -> None:
    recipe = EstimateConfig.at_resolution("wan2.1-t2v-14b", 1280, 720, 81)
    plan = fastest_fitting(recipe, get_gpu_class("rtx-4090"))
    assert not plan.fits
    assert plan.rungs == ()
    options = {option.option.split()[0]: option for option in plan.recipe_options}
    assert {"resolution", "frames", "rank", "optimizer"} <= set(options)
    assert options["resolution"].fits
    assert plan.smallest_gpu is not None
    smallest = get_gpu_class(plan.smallest_gpu["id"])
    assert smallest.memory_gib > get_gpu_class("rtx-4090").memory_gib
    # Only classes with a price seen in the research notes can be the cheapest priced one.
    cheapest = plan.cheapest_priced_gpu
    assert cheapest is not None
    assert cheapest["usd_per_hour"] == min(
        offer.usd_per_hour
        for offer in get_gpu_class(cheapest["id"]).offers
        if offer.usd_per_hour is not None
    )
    assert cheapest["price_seen"]
    doc = plan.to_dict()
    assert doc["fits"] is False
    assert doc["recipe_options"]


def test_smallest_gpu_carries_a_price_when_one_is_known() -> None:
    # FLUX.2 dev at 2048 px needs a datacenter card; prices appear only where a source gave one.
    plan = fastest_fitting(
        EstimateConfig.at_resolution("flux2-dev", 2048, 2048, micro_batch=4),
        get_gpu_class("rtx-3060-12g"),
    )
    assert not plan.fits
    smallest = plan.smallest_gpu
    assert smallest is not None
    assert (smallest["usd_per_hour"] is None) == (smallest["price_seen"] is None)


def test_host_ram_ceiling_rules_out_swap() -> None:
    gpu = get_gpu_class("rtx-3060-12g")
    recipe = EstimateConfig.at_resolution("qwen-image", 1024, 1024)
    assert fastest_fitting(recipe, gpu).fits
    starved = fastest_fitting(recipe, gpu, host_ram_gib=8.0)
    assert not starved.fits


def test_slow_link_marks_ask_first() -> None:
    # A card whose host link crawls makes block swap expensive: the step needs a yes.
    crawl = dataclasses.replace(get_gpu_class("rtx-3060-12g"), id="crawl", pcie_gbs=0.2)
    plan = fastest_fitting(EstimateConfig.at_resolution("qwen-image", 512, 512), crawl)
    assert plan.fits
    flagged = [rung for rung in plan.rungs if rung.ask_first]
    assert flagged
    assert any(rung.slowdown >= ASK_FIRST_SLOWDOWN for rung in flagged) or plan.ask_first


def test_the_plan_lists_every_fitting_configuration_and_its_rule() -> None:
    """Issue 12 item 8: the trade-off is shown, not only the pick; the by-hand rule (add
    aids in ladder order, stop at the first that fits) is marked where it differs."""
    gpu = get_gpu_class("rtx-4090")
    plan = fastest_fitting(EstimateConfig.at_resolution("flux2-klein-4b", 1024, 1024), gpu)
    rows = plan.to_dict()["alternatives"]
    assert "fastest combination" in plan.to_dict()["rule"]
    assert [r["aids"] for r in rows if r["chosen"]] == [{"gradient-checkpointing": True}]
    first = [r for r in rows if r["first_sufficient"]]
    assert first == [
        r for r in rows if r["aids"] == {"fp8": "scaled", "gradient-checkpointing": True}
    ]
    assert all(r["upper_gib"] <= gpu.usable_gib for r in rows)
    chosen = next(r for r in rows if r["chosen"])
    assert all(chosen["step_seconds"] <= r["step_seconds"] for r in rows)
