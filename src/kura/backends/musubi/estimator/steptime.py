"""Musubi's step time: FLOPs of one LoRA step over achievable throughput, plus exposed transfers.

The FLOPs and utilisation model is trainer-neutral (:mod:`kura.sizing.steptime`). Musubi adds
fp8 dequantisation per use (twice with checkpointing), block swap and activation offload
moving bytes over PCIe on a side stream (only the part that exceeds the compute it overlaps
is exposed) and the multi-GPU all-reduce.
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.backends.musubi.estimator.config import EstimateConfig
from kura.backends.musubi.estimator.memory import MemoryBreakdown, lora_params
from kura.backends.musubi.estimator.tokens import BucketTokens
from kura.planning.gpus import GpuClass
from kura.sizing.shapes import GIB, ModelShape
from kura.sizing.steptime import (
    FORWARD,
    TRAIN_CHECKPOINTED,
    TRAIN_PLAIN,
    FlopMultipliers,
    compute_seconds,
    dequant_seconds,
    dit_flops,
    mfu,
)

__all__ = ["StepTime", "forward_flops", "forward_seconds", "step_time"]

UNPINNED_LINK_FACTOR = 0.6
"""Block swap without pinned memory stages through a host memcpy: vram.md §2.2 / PR #972
report a ~10 % (was ~50 %) slowdown; 0.6 of the pinned rate reproduces the older figure."""

ALLREDUCE_LINK_FACTOR = 0.5
"""Multi-GPU gradient all-reduce over the host link (ring: 2 x bytes at about half rate)."""


@dataclass(frozen=True)
class StepTime:
    """Seconds per optimizer step and its parts (per micro-step unless noted)."""

    flops: float
    mfu: float
    compute_s: float
    dequant_s: float
    transfer_s: float
    exposed_transfer_s: float
    allreduce_s: float
    micro_steps: int

    @property
    def micro_step_s(self) -> float:
        return self.compute_s + self.dequant_s + self.exposed_transfer_s

    @property
    def step_s(self) -> float:
        return self.micro_steps * self.micro_step_s + self.allreduce_s


def step_flops(shape: ModelShape, config: EstimateConfig, tokens: BucketTokens) -> float:
    """FLOPs of one micro-step on the bucket ``tokens``, block list by block list."""
    checkpointed = config.gradient_checkpointing != "off"
    if checkpointed:
        return _flops(shape, config, tokens, TRAIN_CHECKPOINTED, config.micro_batch)
    return _flops(shape, config, tokens, TRAIN_PLAIN, config.micro_batch)


def forward_flops(shape: ModelShape, config: EstimateConfig, tokens: BucketTokens) -> float:
    """FLOPs of one inference forward pass of one sample: Linear ``2 P T``, attention
    ``4 T^2 h``, LoRA ``2 P_l T`` (the forward terms of :func:`step_flops`)."""
    return _flops(shape, config, tokens, FORWARD, 1)


def _flops(
    shape: ModelShape,
    config: EstimateConfig,
    tokens: BucketTokens,
    multipliers: FlopMultipliers,
    micro_batch: int,
) -> float:
    lora = lora_params(shape, config.rank)
    return dit_flops(shape, tokens.seen_by, tokens.text_tokens, lora, multipliers, micro_batch)


def forward_seconds(
    shape: ModelShape,
    config: EstimateConfig,
    tokens: BucketTokens,
    memory: MemoryBreakdown,
    gpu: GpuClass,
) -> float:
    """Seconds of one inference forward pass: compute at the utilisation of its tokens, one
    fp8 dequantisation of every Linear weight, and the swapped blocks streamed in once
    (``switch_block_swap_for_inference``: forward only), exposed beyond the compute."""
    compute = compute_seconds(forward_flops(shape, config, tokens), tokens.sequence, gpu)
    dequant = dequant_seconds(shape, gpu, uses=1) if config.fp8 != "none" else 0.0
    link = gpu.pcie_gbs * 1e9
    rate = link if (config.pinned_swap or config.swap_h2d_only) else link * UNPINNED_LINK_FACTOR
    transfer = (memory.swapped_gib - memory.ring_gib) * GIB / rate if memory.swapped_gib else 0.0
    return compute + dequant + max(0.0, transfer - compute)


def step_time(
    shape: ModelShape,
    config: EstimateConfig,
    tokens: BucketTokens,
    memory: MemoryBreakdown,
    gpu: GpuClass,
) -> StepTime:
    """Seconds per optimizer step for a micro-batch of the bucket ``tokens`` on ``gpu``."""
    flops = step_flops(shape, config, tokens)
    utilisation = mfu(config.micro_batch * tokens.sequence)
    compute = compute_seconds(flops, config.micro_batch * tokens.sequence, gpu)
    dequant = 0.0
    if config.fp8 != "none":
        dequant = dequant_seconds(
            shape, gpu, uses=2 if config.gradient_checkpointing != "off" else 1
        )
    link = gpu.pcie_gbs * 1e9
    swap_rate = (
        link if (config.pinned_swap or config.swap_h2d_only) else link * UNPINNED_LINK_FACTOR
    )
    transfer = 0.0
    if memory.swapped_gib:
        # classic: every swapped block goes out and back in once per pass (forward,
        # backward), both directions at once; H2D-only: ~2 (S - ring) copies one way.
        transfer += 2 * (memory.swapped_gib - memory.ring_gib) * GIB / swap_rate
    if config.gradient_checkpointing == "cpu-offload":
        checkpoint_bytes = sum(
            group.count * config.micro_batch * tokens.seen_by(group) * shape.hidden * 2
            for group in shape.groups
        )
        transfer += checkpoint_bytes / link
    exposed = max(0.0, transfer - compute)
    allreduce = 0.0
    if config.gpu_count > 1:
        grad_bytes = lora_params(shape, config.rank) * 4
        allreduce = 2 * grad_bytes / (link * ALLREDUCE_LINK_FACTOR)
    return StepTime(
        flops=flops,
        mfu=utilisation,
        compute_s=compute,
        dequant_s=dequant,
        transfer_s=transfer,
        exposed_transfer_s=exposed,
        allreduce_s=allreduce,
        micro_steps=config.grad_accum,
    )
