"""The peak-memory model: device memory of one LoRA training step, term by term.

vram.md §0 / §4, with the largest bucket setting the peak::

    peak = W_gpu        resident base weights after fp8 and block swap (§2.2)
         + W_deq        fp8 only: bf16 copies of dequantised Linear weights autograd keeps
                        (one block under checkpointing, every block without it; §4.5)
         + LoRA state   fp32 params + fp32 grads + optimizer state (§4.2)
         + CKPT         checkpointing: one bf16 hidden state per block (0 with CPU offload)
         + alpha x WS   recompute + backward working set of one block (c_arch x B x T)
         + extras       Wan 2.2 fp32 per-token time embedding; HunyuanVideo's dense SDPA mask
         + CTX          CUDA context, cuBLAS/cuDNN workspaces

Without checkpointing every block's working set is alive at the end of the forward.
Host memory (swapped weights, inactive Wan 2.2 expert, checkpoint load) is estimated too.
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.backends.musubi.estimator.config import EstimateConfig, validate_config
from kura.backends.musubi.estimator.tokens import BucketTokens, bucket_tokens
from kura.sizing.optimizers import state_bytes_per_param
from kura.sizing.shapes import GIB, BlockGroup, ModelShape

__all__ = [
    "ALPHA",
    "CTX_GIB",
    "HOST_BASELINE_GIB",
    "HostRam",
    "MemoryBreakdown",
    "PeakMemory",
    "host_ram",
    "lora_params",
    "memory_breakdown",
    "peak_memory",
    "swap_split",
]

ALPHA = 1.3
"""Backward transient over one block's saved set (vram.md §0, fitted to Qwen/Wan)."""

CTX_GIB = {"linux": 0.6, "windows": 1.0}
"""CUDA context + workspaces, headless Linux vs. a Windows display GPU (vram.md §4.6)."""

FP8_SCALE_FRACTION = 1 / 33
"""fp8 scaled: one bf16 scale per 64 weights = 1/33 of a block's bytes; scales stay on GPU."""

CROSS_ATTENTION_BYTES_PER_TEXT_TOKEN_H = 10.0
"""Wan cross-attention to 512 text tokens costs ~26 MB per 14B block (vram.md §1.3): ~10 h B."""

HOST_BASELINE_GIB = 4.0
"""Python, PyTorch, CUDA libraries and data-loader workers in host RAM [assumed]."""

SWAP_STAGING_BUFFERS = 2
"""Classic swap without pinned memory stages each block through two pinned buffers (§2.2)."""


@dataclass(frozen=True)
class MemoryBreakdown:
    """Device-memory terms in GiB (the estimator's ``breakdown``) and their inputs."""

    weights: float
    dequant_copies: float
    lora_and_optimizer: float
    checkpoints: float
    working_set: float
    extras: float
    context: float
    swapped_gib: float
    ring_gib: float
    swapped_blocks: dict[str, int]

    @property
    def activations(self) -> float:
        return self.checkpoints + self.working_set + self.extras

    @property
    def peak(self) -> float:
        return (
            self.weights
            + self.dequant_copies
            + self.lora_and_optimizer
            + self.activations
            + self.context
        )


@dataclass(frozen=True)
class HostRam:
    """Host RAM in GiB: steady state during training and the peak (which may be loading)."""

    steady: float
    load: float

    @property
    def peak(self) -> float:
        return max(self.steady, self.load)


def swap_split(shape: ModelShape, blocks_to_swap: int) -> dict[str, int]:
    """How Musubi splits ``--blocks_to_swap`` over the block lists (vram.md §2.1, [code])."""
    groups = {group.name: group for group in shape.groups if group.swappable}
    n = blocks_to_swap
    if n <= 0:
        return dict.fromkeys(groups, 0)
    if shape.swap_rule == "flux1":
        return {"double": n // 2, "single": (n - n // 2) * 2 + 1}
    if shape.swap_rule == "flux2":
        return _flux2_split(groups["double"].count, groups["single"].count, n)
    if shape.swap_rule == "kandinsky":
        text = min(groups["text"].count // 2, n // 4)
        visual = min(max(1, n - text), groups["visual"].count - 2)
        return {"text": text, "visual": visual}
    (name,) = groups
    return {name: n}


def _flux2_split(n_double: int, n_single: int, n: int) -> dict[str, int]:
    """``flux_2/flux2_models.py`` ``enable_block_swap``: ratio split, then rebalance."""
    ratio = n_single / n_double
    double = round(n / (1.0 + ratio / 2.0))
    single = round(double * ratio)
    if n_double * 2 < n_single:
        while double >= 1 and double > n_double - 2:
            double -= 1
            single += 2
    else:
        while single >= 2 and single > n_single - 2:
            single -= 2
            double += 1
    if double == 0 and single == 0:
        if n_single >= n_double:
            single = 1
        else:
            double = 1
    return {"double": double, "single": single}


def lora_params(shape: ModelShape, rank: int) -> float:
    """LoRA parameters at ``rank`` (rank x k_arch, vram.md §1.2)."""
    return rank * shape.lora_params_per_rank


def _moved_mib(shape: ModelShape, group: BlockGroup, fp8: str) -> float:
    """MiB block swap moves per block: the Linear weights, without fp8 scale buffers."""
    mib = shape.lin_mib(group, fp8)
    if fp8 == "scaled" and group.lin_mib_fp8_scaled is not None:
        mib *= 1 - FP8_SCALE_FRACTION
    return mib


def _weights(
    shape: ModelShape, config: EstimateConfig
) -> tuple[float, float, float, dict[str, int]]:
    """Resident weights, swapped weights and H2D ring buffers (GiB) and the swap split.

    Classic swap keeps ``n - S`` blocks' Linear weights on the GPU; H2D-only keeps
    ``n - S + ring`` (the ring buffers hold streamed blocks), vram.md §2.2.
    """
    total = shape.weights_gib[config.fp8]
    split = swap_split(shape, config.blocks_to_swap)
    swapped = 0.0
    ring_gib = 0.0
    for group in shape.groups:
        count = split.get(group.name, 0)
        if not count:
            continue
        moved = _moved_mib(shape, group, config.fp8) / 1024
        ring = min(config.swap_ring_size, count) if config.swap_h2d_only else 0
        swapped += count * moved
        ring_gib += ring * moved
    resident = total - swapped + ring_gib
    if shape.experts > 1 and not config.offload_inactive_dit:
        resident += total - swapped
    return resident, swapped, ring_gib, split


INACTIVE_EXPERT_SOURCE = (
    "[code] wan_train_network.py load_transformer: the high-noise DiT loads to the training "
    "device unless --offload_inactive_dit ('cpu'); with block swap it loads to the CPU and "
    "move_to_device_except_swap_blocks + prepare_block_swap_before_forward put its unswapped "
    "blocks on the GPU, and swap_high_low_weights exchanges the two state dicts in place "
    "(load_state_dict(assign=True)): both experts' unswapped blocks stay resident"
)
"""Why two-expert Wan 2.2 keeps the inactive expert's unswapped weights on the GPU."""


def _dequant_copies(shape: ModelShape, config: EstimateConfig) -> float:
    """bf16 copies autograd keeps of dequantised fp8 weights (vram.md §4.5)."""
    if config.fp8 == "none":
        return 0.0
    if config.gradient_checkpointing == "off":
        return sum(group.count * group.lin_mib_bf16 for group in shape.groups) / 1024
    return max(group.lin_mib_bf16 for group in shape.groups) / 1024


def _lora_state(shape: ModelShape, config: EstimateConfig) -> float:
    per_param = 4 + 4 + state_bytes_per_param(config.optimizer, config.rank)
    return lora_params(shape, config.rank) * per_param / GIB


def _activations(
    shape: ModelShape, config: EstimateConfig, tokens: BucketTokens
) -> tuple[float, float, float]:
    """Checkpoints, working set and extras in GiB for the bucket ``tokens``."""
    b = config.micro_batch
    h = shape.hidden
    cross = 0.0
    if not shape.text_joint:
        cross = b * tokens.text_tokens * h * CROSS_ATTENTION_BYTES_PER_TEXT_TOKEN_H

    def block_set(group: BlockGroup) -> float:
        """Bytes one block of ``group`` saves for backward (its recompute working set)."""
        seen = tokens.seen_by(group)
        return group.act_bytes_per_token * b * seen + (cross if group.sees != "text" else 0.0)

    largest = max(block_set(group) for group in shape.groups)
    checkpoints = 0.0
    if config.gradient_checkpointing == "off":
        working = sum(group.count * block_set(group) for group in shape.groups)
        working += (ALPHA - 1) * largest
    else:
        if config.gradient_checkpointing == "on":
            checkpoints = sum(
                group.count * b * tokens.seen_by(group) * h * 2 for group in shape.groups
            )
        working = ALPHA * largest
    batch_tokens = b * tokens.sequence
    extras = 0.0
    if shape.time_embedding_bytes_per_token_h and not config.force_v2_1_time_embedding:
        extras += batch_tokens * h * shape.time_embedding_bytes_per_token_h
    if shape.dense_sdpa_mask and config.attention == "sdpa" and not config.split_attn:
        extras += 3 * b * tokens.sequence**2
    return checkpoints / GIB, working / GIB, extras / GIB


def memory_breakdown(
    shape: ModelShape, config: EstimateConfig, tokens: BucketTokens
) -> MemoryBreakdown:
    """Device-memory terms for one step on the bucket ``tokens`` (a validated config)."""
    resident, swapped, ring, split = _weights(shape, config)
    checkpoints, working, extras = _activations(shape, config, tokens)
    return MemoryBreakdown(
        weights=resident,
        dequant_copies=_dequant_copies(shape, config),
        lora_and_optimizer=_lora_state(shape, config),
        checkpoints=checkpoints,
        working_set=working,
        extras=extras,
        context=CTX_GIB[config.platform],
        swapped_gib=swapped,
        ring_gib=ring,
        swapped_blocks=split,
    )


def host_ram(shape: ModelShape, config: EstimateConfig, breakdown: MemoryBreakdown) -> HostRam:
    """Host RAM per training process x GPUs.

    Steady: baseline + swapped weights (+ staging buffers without pinned memory) + the
    inactive Wan 2.2 expert's share on the CPU: all of it with ``offload_inactive_dit``,
    its swapped blocks with block swap (:data:`INACTIVE_EXPERT_SOURCE`). Load: with block
    swap Musubi loads the checkpoint to the CPU first, so the file's bf16 weights pass
    through RAM once.
    """
    steady = HOST_BASELINE_GIB + breakdown.swapped_gib
    if breakdown.swapped_gib and not config.pinned_swap and not config.swap_h2d_only:
        largest = max(shape.lin_mib(group, config.fp8) for group in shape.groups) / 1024
        steady += SWAP_STAGING_BUFFERS * largest
    if shape.experts > 1 and config.offload_inactive_dit:
        steady += shape.weights_gib[config.fp8]
    elif shape.experts > 1:
        steady += breakdown.swapped_gib  # the inactive expert's swapped blocks
    load = HOST_BASELINE_GIB
    if config.blocks_to_swap:
        file_gib = shape.weights_gib.get("none", shape.weights_gib[config.fp8])
        load += file_gib * shape.experts
    return HostRam(steady * config.gpu_count, load * config.gpu_count)


@dataclass(frozen=True)
class PeakMemory:
    """The model, tokens of every bucket, and the breakdown at the largest bucket."""

    shape: ModelShape
    tokens: tuple[BucketTokens, ...]
    largest: BucketTokens
    breakdown: MemoryBreakdown


def peak_memory(config: EstimateConfig) -> PeakMemory:
    """Validate ``config`` and compute the memory breakdown at its largest bucket.

    Every term grows with the sequence length, so the bucket with the most tokens per
    sample sets the peak (vram.md §4.6).
    """
    shape = validate_config(config)
    tokens = tuple(bucket_tokens(shape, config, bucket) for bucket in config.buckets)
    largest = max(tokens, key=lambda item: item.sequence)
    return PeakMemory(shape, tokens, largest, memory_breakdown(shape, config, largest))
