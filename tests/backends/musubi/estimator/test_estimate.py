"""The estimator: hand-derived terms, structural facts that must hold, validation, output."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kura.backends.musubi.estimator.calibration import band_fraction
from kura.backends.musubi.estimator.config import Bucket, EstimateConfig
from kura.backends.musubi.estimator.estimate import estimate
from kura.backends.musubi.estimator.memory import peak_memory
from kura.errors import InvalidInput, NotFound, Unsupported
from kura.planning.gpus import get_gpu_class
from kura.sizing.shapes import GIB, MODEL_SHAPES, get_shape


def _breakdown(config: EstimateConfig):
    return peak_memory(config).breakdown


# --- exact, hand-derived numbers -----------------------------------------------------------


def test_weights_bf16_without_swap_are_the_table_value() -> None:
    memory = _breakdown(EstimateConfig.at_resolution("qwen-image", 1024, 1024))
    assert memory.weights == pytest.approx(38.05)
    assert memory.dequant_copies == 0


def test_fp8_scaled_swap_moves_weights_but_not_scales() -> None:
    # 19.66 GiB - 16 blocks x 334 MiB x 32/33 (scales stay on the GPU, vram.md §1.2 notes)
    memory = _breakdown(
        EstimateConfig.at_resolution("qwen-image", 1024, 1024, fp8="scaled", blocks_to_swap=16)
    )
    assert memory.weights == pytest.approx(19.66 - 16 * 334 * 32 / 33 / 1024)
    assert memory.dequant_copies == pytest.approx(648 / 1024)  # one block's bf16 copy


def test_h2d_only_keeps_the_ring_on_the_gpu() -> None:
    memory = _breakdown(
        EstimateConfig.at_resolution(
            "krea2", 1024, 1024, fp8="scaled", blocks_to_swap=20, swap_h2d_only=True
        )
    )
    assert memory.weights == pytest.approx(12.91 - 18 * 427 * 32 / 33 / 1024)


def test_fp8_base_halves_the_linear_bytes() -> None:
    memory = _breakdown(
        EstimateConfig.at_resolution("hunyuan-video", 512, 512, fp8="base", blocks_to_swap=2)
    )
    # 2 units -> 1 double + 3 single blocks, plain fp8: half of 648 / 270 MiB
    assert memory.weights == pytest.approx(11.94 - (324 + 3 * 135) / 1024)


def test_lora_state_is_fp32_weights_grads_and_adam_states() -> None:
    memory = _breakdown(
        EstimateConfig.at_resolution("qwen-image", 1024, 1024, rank=16, optimizer="adamw")
    )
    assert memory.lora_and_optimizer == pytest.approx(16 * 9.22e6 * (4 + 4 + 8) / GIB)


def test_wan_worked_example_activations() -> None:
    # vram.md §4.8: CKPT 12.5 GiB, alpha x WS 15.2 GiB at 832x480x81
    memory = _breakdown(EstimateConfig.at_resolution("wan2.1-t2v-14b", 832, 480, 81, fp8="scaled"))
    assert memory.checkpoints == pytest.approx(40 * 32_760 * 5120 * 2 / GIB)
    assert memory.checkpoints == pytest.approx(12.5, abs=0.05)
    assert memory.working_set == pytest.approx(15.2, abs=0.1)


def test_dual_expert_keeps_the_inactive_expert_unless_offloaded() -> None:
    both = _breakdown(EstimateConfig.at_resolution("wan2.2-a14b", 512, 512, 17, fp8="scaled"))
    offloaded = _breakdown(
        EstimateConfig.at_resolution(
            "wan2.2-a14b", 512, 512, 17, fp8="scaled", offload_inactive_dit=True
        )
    )
    assert both.weights - offloaded.weights == pytest.approx(13.94)


def test_dual_expert_with_block_swap_keeps_both_experts_unswapped_blocks() -> None:
    """wan_train_network.py: with block swap the inactive expert's unswapped blocks are
    moved to the GPU too and the state dicts are exchanged in place, so both stay."""
    swapped = _breakdown(
        EstimateConfig.at_resolution("wan2.2-a14b", 512, 512, 17, fp8="scaled", blocks_to_swap=10)
    )
    moved = 10 * 346 * 32 / 33 / 1024
    assert swapped.weights == pytest.approx(2 * (13.94 - moved))
    one = _breakdown(
        EstimateConfig.at_resolution(
            "wan2.2-a14b-single", 512, 512, 17, fp8="scaled", blocks_to_swap=10
        )
    )
    assert one.weights == pytest.approx(13.94 - moved)
    config = EstimateConfig.at_resolution(
        "wan2.2-a14b", 512, 512, 17, fp8="scaled", blocks_to_swap=10
    )
    from kura.backends.musubi.estimator.memory import host_ram

    ram = host_ram(get_shape("wan2.2-a14b"), config, swapped)
    # both experts' swapped blocks live in host RAM (plus staging without pinned memory)
    staging = 2 * 346 / 1024
    assert ram.steady == pytest.approx(4.0 + 2 * moved + staging)


# --- structural facts ------------------------------------------------------------------------

_SWAP_MODELS = [shape.id for shape in MODEL_SHAPES.values()]


@pytest.mark.parametrize("model", _SWAP_MODELS)
def test_more_swap_never_uses_more_vram(model: str) -> None:
    shape = get_shape(model)
    fp8 = "scaled" if "scaled" in shape.fp8_modes else shape.fp8_modes[-1]
    peaks = [
        _breakdown(EstimateConfig.at_resolution(model, 512, 512, fp8=fp8, blocks_to_swap=n)).peak
        for n in range(shape.swap_limit + 1)
    ]
    assert all(later <= earlier + 1e-9 for earlier, later in itertools.pairwise(peaks))
    assert peaks[-1] < peaks[0]


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(sorted(MODEL_SHAPES)),
    side=st.integers(min_value=4, max_value=24).map(lambda n: n * 64),
    rank=st.sampled_from([4, 8, 16, 32, 64, 128]),
)
def test_higher_rank_and_more_pixels_never_use_less(model: str, side: int, rank: int) -> None:
    shape = get_shape(model)
    fp8 = shape.fp8_modes[0]
    base = EstimateConfig.at_resolution(model, side, side, fp8=fp8, rank=rank)
    assert _breakdown(base.replace(rank=rank * 2)).peak > _breakdown(base).peak
    bigger = base.replace(buckets=(Bucket(side + 64, side),))
    assert _breakdown(bigger).peak > _breakdown(base).peak


@pytest.mark.parametrize("model", ["qwen-image", "wan2.1-t2v-14b", "flux2-dev", "zimage"])
def test_fp8_lowers_weights_with_checkpointing(model: str) -> None:
    config = EstimateConfig.at_resolution(model, 1024, 1024)
    bf16 = _breakdown(config)
    fp8 = _breakdown(config.replace(fp8="scaled"))
    assert fp8.weights < bf16.weights
    assert fp8.peak < bf16.peak


def test_fp8_without_checkpointing_saves_nothing() -> None:
    # vram.md §4.5: autograd keeps every dequantised bf16 weight alive without GC.
    config = EstimateConfig.at_resolution("qwen-image", 1024, 1024, gradient_checkpointing="off")
    assert _breakdown(config.replace(fp8="scaled")).peak >= _breakdown(config).peak


def test_checkpointing_off_costs_more_activations_and_offload_less() -> None:
    config = EstimateConfig.at_resolution("wan2.1-t2v-14b", 832, 480, 33, fp8="scaled")
    on = _breakdown(config)
    off = _breakdown(config.replace(gradient_checkpointing="off"))
    offload = _breakdown(config.replace(gradient_checkpointing="cpu-offload"))
    assert off.activations > on.activations > offload.activations
    assert offload.checkpoints == 0


def test_split_attn_removes_hunyuan_dense_mask() -> None:
    config = EstimateConfig.at_resolution("hunyuan-video", 1280, 720, 41, fp8="base")
    assert _breakdown(config).extras > 4.0
    assert _breakdown(config.replace(split_attn=True)).extras == 0
    assert _breakdown(config.replace(attention="flash")).extras == 0


def test_v2_1_time_embedding_removes_the_fp32_embedding() -> None:
    config = EstimateConfig.at_resolution("wan2.2-a14b-single", 1280, 720, 25, fp8="scaled")
    assert _breakdown(config).extras > 0
    assert _breakdown(config.replace(force_v2_1_time_embedding=True)).extras == 0


def test_largest_bucket_sets_the_peak() -> None:
    small, large = Bucket(512, 512, count=90), Bucket(1024, 1024, count=10)
    mixed = estimate(EstimateConfig("zimage", buckets=(small, large)))
    alone = estimate(EstimateConfig("zimage", buckets=(large,)))
    assert mixed.peak_vram_gib == alone.peak_vram_gib
    assert mixed.largest_bucket.bucket == large
    assert len(mixed.tokens) == 2


def test_band_widens_for_uncalibrated_architectures() -> None:
    calibrated, _ = band_fraction(get_shape("qwen-image"))
    for model in ("krea2", "ideogram4", "hidream-o1", "kandinsky5-pro-video", "flux2-dev"):
        assert band_fraction(get_shape(model))[0] > calibrated
    assert (
        band_fraction(get_shape("ideogram4"))[0] > band_fraction(get_shape("flux1-kontext-dev"))[0]
    )


def test_fits_rule_and_headroom() -> None:
    config = EstimateConfig.at_resolution("flux2-klein-9b", 1024, 1024)
    big = estimate(config, get_gpu_class("h100-sxm"))
    small = estimate(config, get_gpu_class("rtx-3060-12g"))
    assert big.fits is True
    assert small.fits is False
    assert big.upper_gib == pytest.approx(big.peak_vram_gib + big.band_gib / 2)
    assert estimate(config).fits is None


# --- step time: structure, not timings ------------------------------------------------------


def test_step_time_structure() -> None:
    gpu = get_gpu_class("rtx-4090")
    config = EstimateConfig.at_resolution("zimage", 1024, 1024, total_steps=1000)
    on = estimate(config, gpu)
    off = estimate(config.replace(gradient_checkpointing="off"), gpu)
    assert on.step is not None
    assert off.step is not None
    assert on.step.flops > off.step.flops  # recompute
    assert on.total_hours == pytest.approx(1000 * on.step_seconds / 3600)
    accumulated = estimate(config.replace(grad_accum=4), gpu)
    assert accumulated.step_seconds == pytest.approx(4 * on.step_seconds)
    faster = estimate(config, get_gpu_class("h100-sxm"))
    assert faster.step_seconds < on.step_seconds
    multi = estimate(config.replace(gpu_count=2), gpu)
    assert multi.step is not None
    assert multi.step.allreduce_s > 0
    assert multi.host_ram_gib == pytest.approx(2 * on.host_ram_gib)


def test_swap_transfers_are_counted_and_host_ram_holds_them() -> None:
    gpu = get_gpu_class("rtx-3060-12g")
    config = EstimateConfig.at_resolution("qwen-image", 512, 512, fp8="scaled")
    none = estimate(config, gpu)
    swapped = estimate(config.replace(blocks_to_swap=40), gpu)
    assert swapped.step is not None
    assert swapped.step.transfer_s > 0
    assert swapped.step_seconds >= none.step_seconds
    assert swapped.host_ram_gib > none.host_ram_gib


# --- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"model": "nope"}, NotFound),
        ({"optimizer": "sgd-nesterov-9000"}, NotFound),
        ({"attention": "sage"}, Unsupported),
        (
            {"swap_h2d_only": True, "blocks_to_swap": 4, "gradient_checkpointing": "off"},
            Unsupported,
        ),
        ({"blocks_to_swap": 60}, InvalidInput),
        ({"micro_batch": 0}, InvalidInput),
        ({"cached_text_encoder": False}, Unsupported),
        ({"model": "ideogram4", "fp8": "none"}, Unsupported),
        ({"model": "krea2", "fp8": "base"}, Unsupported),
        ({"model": "hunyuan-video", "fp8": "scaled"}, Unsupported),
        ({"model": "krea2", "gradient_checkpointing": "cpu-offload"}, Unsupported),
    ],
)
def test_refused_configurations(changes: dict[str, object], error: type[Exception]) -> None:
    config = EstimateConfig.at_resolution("qwen-image", 1024, 1024).replace(**changes)
    with pytest.raises(error):
        estimate(config)


def test_to_dict_shape() -> None:
    config = EstimateConfig.at_resolution(
        "wan2.1-t2v-14b", 832, 480, 81, fp8="scaled", blocks_to_swap=20, total_steps=100
    )
    doc = estimate(config, get_gpu_class("rtx-4090")).to_dict()
    json.dumps(doc)
    assert doc["kind"] == "run-estimate"
    for key in (
        "peak_vram_gib",
        "band_gib",
        "host_ram_gib",
        "step_seconds",
        "total_hours",
        "fits",
        "tokens",
        "confidence",
        "assumptions",
    ):
        assert key in doc
    assert set(doc["breakdown"]) >= {
        "weights",
        "lora_and_optimizer",
        "activations",
        "swap_buffers",
        "context",
    }
    parts = ("weights", "lora_and_optimizer", "activations", "swap_buffers", "context")
    assert sum(doc["breakdown"][key] for key in parts) == pytest.approx(
        doc["peak_vram_gib"], abs=0.05
    )
    assert doc["tokens"][0]["sequence"] == 32_760
    assert any("cached" in line for line in doc["assumptions"])


def test_step_time_is_averaged_over_buckets_by_count() -> None:
    gpu = get_gpu_class("rtx-4090")
    small, large = Bucket(512, 512, count=90), Bucket(1024, 1024, count=10)
    mixed = estimate(EstimateConfig("zimage", buckets=(small, large)), gpu)
    t_small, t_large = mixed.bucket_step_seconds
    assert t_small < t_large
    assert mixed.step_seconds == pytest.approx((90 * t_small + 10 * t_large) / 100)
