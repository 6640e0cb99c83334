"""AI-Toolkit's estimator: every step sized, held to what AI-Toolkit publishes (issue 29).

Semantics pinned here are read from /work/shared/trainers/ai-toolkit-27a03a9 (cited per
test); the calibration table is ``kura/backends/aitoolkit/estimator/calibration.py``.
"""

from __future__ import annotations

import dataclasses

import pytest
from aitk_cases import image_dataset, make_inputs, make_spec

from kura.backends.aitoolkit.archs import model_for
from kura.backends.aitoolkit.estimator.calibration import (
    MIN_BAND,
    POINTS,
    band_fraction,
    evaluate_points,
    held_out_median_error,
)
from kura.backends.aitoolkit.estimator.estimate import estimate_setup
from kura.backends.aitoolkit.estimator.memory import step_memories
from kura.backends.aitoolkit.estimator.setup import AitkSetup, Bucket
from kura.backends.aitoolkit.fit import AitkProblem, estimate_run, fit_run
from kura.backends.aitoolkit.knobs import Knobs
from kura.backends.base import PlanInputs
from kura.models.bundles import get_bundle
from kura.planning.gpus import get_gpu_class
from kura.sizing.shapes import get_shape


def _point(name: str):
    return next(p for p in POINTS if p.name == name)


def _peaks(setup: AitkSetup) -> dict[str, float]:
    return {m.step: m.peak_gib for m in step_memories(setup)}


def _with(setup: AitkSetup, **knobs: object) -> AitkSetup:
    merged = {**setup.knobs.model_dump(), **knobs}
    return dataclasses.replace(setup, knobs=Knobs.model_validate(merged))


@pytest.mark.parametrize("point", [p for p in POINTS if p.outcome == "fits"], ids=lambda p: p.name)
def test_every_published_example_fits_its_card(point) -> None:
    """config/examples/*_{24gb,32gb,48}.yaml and the fits reports: every step's upper edge
    within the card, held-out points included."""
    gpu = get_gpu_class(point.gpu)
    found = estimate_setup(
        point.setup(), gpu, accumulation=1, total_steps=100, sample_every=50, prompts=1
    )
    assert all(cost.fits for cost in found.costs), [
        (c.step, c.upper_gib, gpu.usable_gib) for c in found.costs
    ]


@pytest.mark.parametrize("point", [p for p in POINTS if p.outcome == "oom"], ids=lambda p: p.name)
def test_a_configuration_reported_out_of_memory_is_never_estimated_to_fit(point) -> None:
    gpu = get_gpu_class(point.gpu)
    found = estimate_setup(
        point.setup(), gpu, accumulation=1, total_steps=100, sample_every=50, prompts=1
    )
    assert not all(cost.fits for cost in found.costs)


def test_held_out_points_are_measured_and_their_median_error_is_reported() -> None:
    held = [r for r in evaluate_points() if r.point.held_out]
    assert held and any(r.error is not None for r in held)
    for result in held:  # held-out points take no part in the band they measure
        architecture = get_shape(result.point.shape).architecture
        used = [
            p for p in POINTS if not p.held_out and get_shape(p.shape).architecture == architecture
        ]
        assert band_fraction(architecture)[1].startswith(f"{len(used)} calibration point(s)")
    error = held_out_median_error()
    assert error is not None and error < 0.25  # 17 % at this commit (report of issue 29)


def test_the_calibration_table_is_sourced_and_uses_known_cards() -> None:
    for point in POINTS:
        assert point.source and get_gpu_class(point.gpu)
        assert (point.outcome == "measured") == (point.measured_gib is not None)


def test_a_band_is_never_narrower_than_the_floor() -> None:
    for point in POINTS:
        band, reason = band_fraction(get_shape(point.shape).architecture)
        assert band >= MIN_BAND and reason


def test_quantizing_halves_the_transformer_and_3_bit_with_its_adapter_quarters_it() -> None:
    """quantize.py:448-474 (qfloat8, blockwise), :281-427 (uintN with the ARA LoRA at the
    model dtype)."""
    base = _with(_point("qwen_image_24gb").setup(), quantize=False, accuracy_recovery_adapter=False)
    train = "train@1024x1024"
    full = step_memories(base)[-2].terms["transformer"]
    q8 = step_memories(_with(base, quantize=True, qtype="qfloat8"))[-2].terms["transformer"]
    q3 = step_memories(_with(base, quantize=True, qtype="uint3", accuracy_recovery_adapter=True))
    q3_train = next(m for m in q3 if m.step == train)
    assert q8 == pytest.approx(full / 2, rel=0.02)
    assert q3_train.terms["transformer"] < full / 4 + 0.5
    assert q3_train.terms["accuracy_recovery_adapter"] > 0


def test_the_text_encoder_stays_in_training_unless_cached_or_unloaded() -> None:
    """SDTrainer.py:351-378: caching or unloading both move the encoder off the GPU."""
    setup = _with(_point("qwen_image_24gb").setup(), cache_text_embeddings=False)
    resident = next(m for m in step_memories(setup) if m.kind == "train")
    cached = next(
        m for m in step_memories(_with(setup, cache_text_embeddings=True)) if m.kind == "train"
    )
    assert "text_encoder" in resident.terms and "text_encoder" not in cached.terms
    assert "cache-text" in _peaks(_with(setup, cache_text_embeddings=True))


def test_low_vram_keeps_the_dit_off_the_gpu_while_loading_and_parks_wan22s_idle_expert() -> None:
    """qwen_image.py:141-143, :219-220; wan22_14b_model.py:131-146."""
    setup = _with(_point("flux_24gb").setup(), low_vram=False)
    assert _peaks(_with(setup, low_vram=True))["load"] < _peaks(setup)["load"]
    wan = _point("wan22_14b_24gb").setup()
    both = _peaks(_with(wan, low_vram=False))["train@1024x1024"]
    one = _peaks(wan)["train@1024x1024"]
    assert both - one > 5  # a whole 4-bit 14 B expert


def test_layer_offloading_moves_its_share_of_the_weights_and_costs_time() -> None:
    """manager.py:109-111: a random share ``percent`` of the Linear layers stays in RAM."""
    setup = _point("qwen_image_24gb").setup()
    half = _with(setup, layer_offloading_transformer_percent=0.5)
    kept = next(m for m in step_memories(half) if m.kind == "train").terms["transformer"]
    full = next(m for m in step_memories(setup) if m.kind == "train").terms["transformer"]
    assert kept < 0.6 * full

    # The manager prefetches on a transfer stream: hidden behind a long step, exposed in a
    # short one (manager_modules.py:23-27).
    def seconds(s: AitkSetup, card: str = "rtx-4090") -> float:
        found = estimate_setup(
            s, get_gpu_class(card), accumulation=1, total_steps=1, sample_every=None, prompts=0
        )
        return found.step_seconds or 0.0

    small = dataclasses.replace(setup, buckets=(Bucket(512, 512),))
    everything = _with(small, layer_offloading_transformer_percent=1.0)
    assert seconds(half) >= seconds(setup)
    assert seconds(everything, "h100-sxm") > 1.1 * seconds(small, "h100-sxm")


def test_checkpointing_trades_activations_for_a_third_more_compute() -> None:
    setup = _point("flux_24gb").setup()
    gpu = get_gpu_class("rtx-4090")
    plain = _with(setup, gradient_checkpointing=False)
    assert _peaks(plain)["train@1024x1024"] > _peaks(setup)["train@1024x1024"] + 5
    with_gc = estimate_setup(
        setup, gpu, accumulation=1, total_steps=1, sample_every=None, prompts=0
    )
    without = estimate_setup(
        plain, gpu, accumulation=1, total_steps=1, sample_every=None, prompts=0
    )
    ratio = (with_gc.step_seconds or 0) / (without.step_seconds or 1)
    assert 1.2 < ratio < 1.6


def test_the_baseline_sample_is_a_step_of_its_own_when_asked_for() -> None:
    """BaseSDTrainProcess.py:2472-2477: skip_first_sample false samples before step 0."""
    setup = _point("wan21_14b_24gb").setup()
    assert "sample-baseline" in _peaks(setup) and "sample" in _peaks(setup)
    assert "sample-baseline" not in _peaks(dataclasses.replace(setup, sample_first=False))


def test_an_edit_model_puts_its_control_latents_into_the_sequence() -> None:
    """flux_kontext.py:311-314, qwen_image_edit.py:260 concatenate the control latents."""
    plain = _point("qwen_image_24gb").setup()
    edit = dataclasses.replace(plain, control=True)
    assert _peaks(edit)["train@1024x1024"] > _peaks(plain)["train@1024x1024"] + 1


def _plan_inputs(bundle: str) -> PlanInputs:
    return PlanInputs(
        bundle=get_bundle(bundle), datasets={}, compile=make_inputs(bundle, [image_dataset()])
    )


def test_every_step_of_an_ai_toolkit_plan_has_a_peak_a_band_a_verdict_and_a_time() -> None:
    spec = make_spec(training={"sample_at_first": True})
    evaluation = estimate_run(spec, _plan_inputs("aitk-qwen-image"), get_gpu_class("rtx-4090"))
    steps = [c.step for c in evaluation.costs]
    assert steps == [
        "load",
        "cache-latents",
        "cache-text",
        "sample-baseline",
        "train@1024x1024",
        "sample",
    ]
    for cost in evaluation.costs:
        assert cost.peak_gib and cost.upper_gib and cost.upper_gib > cost.peak_gib
        assert cost.fits is not None and cost.seconds is not None and cost.seconds > 0, cost
    assert evaluation.step_seconds


def test_training_is_sized_at_ai_toolkits_own_buckets_not_the_runs_square() -> None:
    """AI-Toolkit never raises an image's area (``toolkit/buckets.py:17``): 512 px pictures
    in a 1024 px run train at 512x512, and a folder of two sizes trains at both."""
    small = dataclasses.replace(image_dataset(), image_sizes=((512, 512, 10),))
    mixed = dataclasses.replace(image_dataset(), image_sizes=((512, 512, 5), (1024, 1024, 5)))

    def train_steps(source) -> dict[str, float]:
        inputs = PlanInputs(
            bundle=get_bundle("aitk-qwen-image"),
            datasets={},
            compile=make_inputs("aitk-qwen-image", [source]),
        )
        found = estimate_run(make_spec(), inputs, get_gpu_class("rtx-4090"))
        return {c.step: c.peak_gib or 0.0 for c in found.costs if c.step.startswith("train")}

    assert list(train_steps(small)) == ["train@512x512"]
    both = train_steps(mixed)
    assert sorted(both) == ["train@1024x1024", "train@512x512"]
    assert both["train@512x512"] < both["train@1024x1024"]


def test_the_ladder_walks_ai_toolkits_aids_in_cost_order_with_reasons() -> None:
    spec = make_spec(config={})
    fit = fit_run(
        spec, _plan_inputs("aitk-qwen-image"), get_gpu_class("rtx-4090"), host_ram_gib=None
    )
    assert fit.fits
    names = [rung.aid for rung in fit.rungs]
    order = [
        "micro-batch",
        "cache-text-embeddings",
        "gradient-checkpointing",
        "quantize",
        "quantize-text-encoder",
        "4bit-accuracy-recovery",
        "layer-offloading",
        "low-vram",
    ]
    assert names == sorted(names, key=order.index)
    assert "gradient-checkpointing" in names
    # Caching the captions keeps their meaning: taken before lossier aids (preferred).
    assert "cache-text-embeddings" in names
    assert fit.document["fits"] and set(fit.aid_keys) == set(dict.fromkeys(fit.aid_keys))
    assert all("GiB" in rung.reason for rung in fit.rungs)
    assert fit.document["sizeable"] is True
    assert fit.settings.get("gradient_checkpointing") is True


def test_a_model_without_a_shape_stays_unsized_and_says_which_step() -> None:
    """Every bundle Kura ships has a shape; a model class added without one is unsized."""
    spec = make_spec(base="chroma1-base")
    inputs = PlanInputs(bundle=get_bundle("chroma1-base"), datasets={})
    model = model_for("chroma1-base")
    assert model is not None
    unshaped = dataclasses.replace(model, bundle="aitk-model-without-a-shape")
    problem = AitkProblem(spec, unshaped, get_gpu_class("h100-pcie"), inputs)
    evaluation = problem.evaluate(problem.baseline())
    assert evaluation is not None
    unsized = [c for c in evaluation.costs if c.fits is None]
    assert [c.step for c in unsized] == ["train"]
    assert any("--accept-risk" in note for note in unsized[0].notes)


def test_the_sample_peak_counts_the_denoiser_or_the_decoder_not_both() -> None:
    setup = dataclasses.replace(_point("flux_24gb").setup(), sample=Bucket(1024, 1024))
    sample = next(m for m in step_memories(setup) if m.step == "sample")
    assert ("denoise" in sample.terms) != ("vae_decode" in sample.terms)


def _train(setup: AitkSetup) -> dict[str, float]:
    return next(m.terms for m in step_memories(setup) if m.kind == "train")


def test_chromas_dense_attention_mask_is_counted_per_head_and_grows_without_checkpointing() -> None:
    """Chroma builds a B x 24 heads x L x L bool mask (chroma/src/model.py:244-249) and SDPA
    saves a bf16 bias of it per attention for backward."""
    setup = _point("chroma_24gb").setup()
    tokens = 64 * 64 + 512
    mask = _train(setup)["attention_mask"]
    assert mask == pytest.approx(24 * tokens**2 * 3 / 2**30, rel=0.01)
    plain = dataclasses.replace(
        setup, knobs=setup.knobs.model_copy(update={"gradient_checkpointing": False})
    )
    assert _train(plain)["attention_mask"] > 30 * mask  # one bias per block (57)
    flux = _point("flux_24gb").setup()
    assert "attention_mask" not in _train(flux)


def test_chroma_is_flux_without_its_modulation_and_sdxls_unet_adds_up_to_its_params() -> None:
    from kura.sizing.steptime import linear_params

    chroma, flux = get_shape("chroma1"), get_shape("flux1-kontext-dev")
    assert [g.count for g in chroma.groups] == [g.count for g in flux.groups]
    assert chroma.params_b == pytest.approx(flux.params_b - 3.0, abs=0.05)
    sdxl = get_shape("sdxl-unet")
    outside_blocks = 0.341e9 + 0.025e9  # cross-attention k/v and time embeddings
    assert linear_params(sdxl) + outside_blocks == pytest.approx(2.567e9, rel=0.005)
    assert sdxl.weights_gib["none"] == pytest.approx(2.567e9 * 2 / 2**30, rel=0.01)


def test_quantize_does_not_shrink_sdxl_which_ai_toolkit_never_quantizes() -> None:
    setup = _point("sdxl_12gb_sd_scripts").setup()
    quantized = dataclasses.replace(
        setup, knobs=setup.knobs.model_copy(update={"quantize": True, "quantize_te": True})
    )
    assert _peaks(quantized) == _peaks(setup)


def test_sdxls_step_time_matches_the_published_sd_scripts_rates() -> None:
    """vram.md §3.2 rows 45-46: SDXL LoRA at 1024 px without checkpointing, 1.12 s/it on a
    3090 Ti and 1.23 s/it on a 3090 (sd-scripts; the same UNet)."""
    from kura.backends.aitoolkit.estimator.steptime import TIME_BAND, train_step_time

    setup = dataclasses.replace(
        _point("sdxl_12gb_sd_scripts").setup(),
        knobs=Knobs.model_validate({"gradient_checkpointing": False}),
        rank=32,
    )
    seconds = train_step_time(setup, Bucket(1024, 1024), get_gpu_class("rtx-3090"), 1).step_s
    assert abs(seconds / 1.23 - 1) < TIME_BAND / 2


def test_sdxls_levels_see_their_own_grids_and_its_resnets_do_not_attend() -> None:
    """At 1024 px the UNet's 32x32, 64x64 and 128x128 levels see 1024, 4096 and 16384
    positions; a forward is ~6.7 TFLOP (the shape's flops source)."""
    from kura.backends.aitoolkit.estimator.setup import tokens_of
    from kura.sizing.steptime import FORWARD, dit_flops

    shape = get_shape("sdxl-unet")
    tokens = tokens_of(shape, Bucket(1024, 1024), control=False)
    seen = {g.name: tokens.seen_by(g) for g in shape.groups}
    assert seen == {
        "attn_32": 1024,
        "attn_64": 4096,
        "resnet_32": 1024,
        "resnet_64": 4096,
        "resnet_128": 16384,
    }
    flops = dit_flops(shape, tokens.seen_by, tokens.text, 0.0, FORWARD, 1)
    assert flops == pytest.approx(6.7e12, rel=0.02)


def test_checkpointing_keeps_each_unet_blocks_input_at_its_own_width() -> None:
    from kura.backends.aitoolkit.estimator.memory import ALPHA, activations_gib
    from kura.backends.aitoolkit.estimator.setup import tokens_of

    setup = _point("sdxl_12gb_sd_scripts").setup()
    tokens = tokens_of(setup.shape, Bucket(1024, 1024), control=False)
    inputs = (
        60 * 1024 * 1280 + 10 * 4096 * 640 + 7 * 1024 * 1280 + 5 * 4096 * 640 + 5 * 16384 * 320
    ) * 2
    largest = max(g.act_bytes_per_token * tokens.seen_by(g) for g in setup.shape.groups)
    expected = (inputs + ALPHA * largest) / 2**30
    assert activations_gib(setup, tokens) == pytest.approx(expected)
