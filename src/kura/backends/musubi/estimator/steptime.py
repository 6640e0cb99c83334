"""Step time: FLOPs of one LoRA step over achievable throughput, plus exposed transfers.

FLOPs per micro-step (vram.md §4.7, derived for a frozen base):

* Linear layers: forward ``2 P T``; the base weights need no weight-gradient GEMMs, so the
  backward is only the input gradient, ``2 P T``; checkpointing recomputes the forward,
  ``2 P T`` more. ``6 P T`` with checkpointing, ``4 P T`` without. ``P`` is the Linear
  parameters one token passes through (half a dual-stream block's weights).
* Attention (flash-style kernels): forward ``4 T^2 h``, backward ~``10 T^2 h`` (it
  recomputes the scores), recompute ``4 T^2 h``: 18 (or 14) ``T^2 h`` per block; Wan's and
  Kandinsky's cross-attention the same with ``T x T_text``.
* LoRA: forward ``2 P_l T``, backward input + LoRA-weight gradients ``4 P_l T``, recompute
  ``2 P_l T``.

Throughput is the GPU class's dense bf16 peak x a model FLOP utilisation that grows with
tokens per micro-batch (``MFU_MAX x n / (n + MFU_HALF_TOKENS)``). fp8 weights add the
dequantisation traffic (read 1 B, write 2 B per weight per use) at memory bandwidth. Block
swap and activation offload move bytes over PCIe on a side stream; only the part that
exceeds the compute it overlaps is exposed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.backends.musubi.estimator.config import EstimateConfig
from kura.backends.musubi.estimator.memory import MemoryBreakdown, lora_params
from kura.backends.musubi.estimator.shapes import GIB, ModelShape
from kura.backends.musubi.estimator.tokens import BucketTokens
from kura.planning.gpus import GpuClass

__all__ = [
    "MFU_HALF_TOKENS",
    "MFU_MAX",
    "StepTime",
    "forward_flops",
    "forward_seconds",
    "mfu",
    "step_time",
]

MFU_MAX = 0.5
"""Utilisation ceiling for large token counts on one GPU (vram.md §4.7: 0.3-0.5)."""

MFU_HALF_TOKENS = 2048
"""Tokens per micro-batch at which utilisation reaches half the ceiling. With MFU_MAX this
gives 0.35 at FLUX.1's 4608 tokens (vram.md §4.7 measured ~0.30 on an A6000) and 0.45 at
FramePack's ~19 k tokens (its 30 s/it on a 4090 implies ~0.45-0.5)."""

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


def mfu(tokens_per_micro_batch: float) -> float:
    """Model FLOP utilisation expected at ``tokens_per_micro_batch``."""
    n = max(tokens_per_micro_batch, 1.0)
    return MFU_MAX * n / (n + MFU_HALF_TOKENS)


def step_flops(shape: ModelShape, config: EstimateConfig, tokens: BucketTokens) -> float:
    """FLOPs of one micro-step on the bucket ``tokens``, block list by block list."""
    checkpointed = config.gradient_checkpointing != "off"
    if checkpointed:
        return _flops(shape, config, tokens, (6, 18, 8), config.micro_batch)
    return _flops(shape, config, tokens, (4, 14, 6), config.micro_batch)


def forward_flops(shape: ModelShape, config: EstimateConfig, tokens: BucketTokens) -> float:
    """FLOPs of one inference forward pass of one sample: Linear ``2 P T``, attention
    ``4 T^2 h``, LoRA ``2 P_l T`` (the forward terms of :func:`step_flops`)."""
    return _flops(shape, config, tokens, (2, 4, 2), 1)


def _flops(
    shape: ModelShape,
    config: EstimateConfig,
    tokens: BucketTokens,
    multipliers: tuple[int, int, int],
    micro_batch: int,
) -> float:
    linear_mult, attention_mult, lora_mult = multipliers
    all_linear = sum(group.count * group.lin_params for group in shape.groups)
    lora_per_linear = lora_params(shape, config.rank) / all_linear
    flops = 0.0
    for group in shape.groups:
        seen = tokens.seen_by(group)
        per_token = group.lin_params / group.streams
        block = (linear_mult + lora_mult * lora_per_linear) * per_token * seen
        block += attention_mult * seen * seen * shape.hidden
        if not shape.text_joint and group.sees != "text":
            block += attention_mult * seen * tokens.text_tokens * shape.hidden
        flops += group.count * block * micro_batch
    return flops


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
    compute = forward_flops(shape, config, tokens) / (gpu.bf16_tflops * 1e12 * mfu(tokens.sequence))
    dequant = 0.0
    if config.fp8 != "none":
        linear_params = sum(group.count * group.lin_params for group in shape.groups)
        dequant = 3 * linear_params / (gpu.memory_bandwidth_gbs * 1e9)
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
    compute = flops / (gpu.bf16_tflops * 1e12 * utilisation)
    dequant = 0.0
    if config.fp8 != "none":
        uses = 2 if config.gradient_checkpointing != "off" else 1
        linear_params = sum(group.count * group.lin_params for group in shape.groups)
        dequant = uses * 3 * linear_params / (gpu.memory_bandwidth_gbs * 1e9)
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
