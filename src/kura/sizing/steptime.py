"""FLOPs of a LoRA step on a frozen DiT and the throughput a GPU class achieves on them.

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
tokens per micro-batch (``MFU_MAX x n / (n + MFU_HALF_TOKENS)``). 8-bit weights add the
dequantisation traffic (read 1 B, write 2 B per weight per use) at memory bandwidth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kura.planning.gpus import GpuClass
from kura.sizing.shapes import BlockGroup, ModelShape

__all__ = [
    "FORWARD",
    "MFU_HALF_TOKENS",
    "MFU_MAX",
    "TRAIN_CHECKPOINTED",
    "TRAIN_PLAIN",
    "FlopMultipliers",
    "compute_seconds",
    "dequant_seconds",
    "dit_flops",
    "linear_params",
    "mfu",
]

MFU_MAX = 0.5
"""Utilisation ceiling for large token counts on one GPU (vram.md §4.7: 0.3-0.5)."""

MFU_HALF_TOKENS = 2048
"""Tokens per micro-batch at which utilisation reaches half the ceiling. With MFU_MAX this
gives 0.35 at FLUX.1's 4608 tokens (vram.md §4.7 measured ~0.30 on an A6000) and 0.45 at
FramePack's ~19 k tokens (its 30 s/it on a 4090 implies ~0.45-0.5)."""

DEQUANT_BYTES_PER_WEIGHT = 3
"""One use of an 8-bit weight reads 1 B and writes its 2 B bf16 copy (vram.md §4.7)."""


@dataclass(frozen=True)
class FlopMultipliers:
    """Multipliers of ``P T`` (Linear), ``T^2 h`` (attention) and ``P_l T`` (LoRA)."""

    linear: int
    attention: int
    lora: int


TRAIN_CHECKPOINTED = FlopMultipliers(6, 18, 8)
TRAIN_PLAIN = FlopMultipliers(4, 14, 6)
FORWARD = FlopMultipliers(2, 4, 2)


def mfu(tokens_per_micro_batch: float) -> float:
    """Model FLOP utilisation expected at ``tokens_per_micro_batch``."""
    n = max(tokens_per_micro_batch, 1.0)
    return MFU_MAX * n / (n + MFU_HALF_TOKENS)


def linear_params(shape: ModelShape) -> float:
    """Linear parameters of every block of the DiT."""
    return sum(group.count * group.lin_params for group in shape.groups)


def dit_flops(
    shape: ModelShape,
    seen_by: Callable[[BlockGroup], float],
    text_tokens: float,
    lora_params: float,
    multipliers: FlopMultipliers,
    micro_batch: int,
) -> float:
    """FLOPs of one pass over every block list: ``seen_by(group)`` is the tokens one sample
    puts through ``group``; cross-attention models add ``T x T_text`` per block; attention
    runs at the group's width (a UNet level's channels) and not at all in ResNet blocks."""
    lora_per_linear = lora_params / linear_params(shape)
    flops = 0.0
    for group in shape.groups:
        seen = seen_by(group)
        per_token = group.lin_params / group.streams
        block = (multipliers.linear + multipliers.lora * lora_per_linear) * per_token * seen
        if group.attends:
            width = shape.width_of(group)
            block += multipliers.attention * seen * seen * width
            if not shape.text_joint and group.sees != "text":
                block += multipliers.attention * seen * text_tokens * width
        flops += group.count * block * micro_batch
    return flops


def compute_seconds(flops: float, tokens_per_micro_batch: float, gpu: GpuClass) -> float:
    """Seconds ``flops`` take on ``gpu`` at the utilisation of ``tokens_per_micro_batch``."""
    return flops / (gpu.bf16_tflops * 1e12 * mfu(tokens_per_micro_batch))


def dequant_seconds(shape: ModelShape, gpu: GpuClass, uses: int) -> float:
    """Seconds to dequantise every 8-bit Linear weight ``uses`` times at memory bandwidth."""
    return uses * DEQUANT_BYTES_PER_WEIGHT * linear_params(shape) / (gpu.memory_bandwidth_gbs * 1e9)
