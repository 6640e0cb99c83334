"""KohakuMoss's step time: FLOPs of one token-batched LoRA step on the MOSS DiT, over the GPU
class's throughput (the trainer-neutral model, :mod:`kura.sizing.steptime`), scaled by what
KohakuMoss's README measured.

A step packs samples up to ``MAX_TOKENS`` joint tokens (KohakuMoss's token batching,
kohakumoss.md: ``training/build/model.py:77 workload`` splits MAX_TOKENS between image and
text). Per token a MOSS block's Linear weights are its LoRA targets ``proj_{q,k,v,o}`` (4
dim²) and the SwiGLU ``ffn_up_gate`` + ``ffn_down`` (3 dim x ffn_dim) (kohakumoss.md §export
keys); attention is per sample, over the sample's image tokens (``TARGET_AREA / 256``: FLUX.2
VAE latents packed 2x2, kohakumoss.md) plus its caption. ``speed`` runs without
checkpointing, every other profile recomputes each block.

The README's speed table (samples/s, LoRA r32 at 1 MP, 8192 tokens, latent + text cache)
recalibrates the FLOPs estimate (:data:`README_SPEEDS`); its spread is the band. Runs
Kura follows recalibrate the plan again (``metrics.jsonl`` seconds per step,
``kura.runs.history.step_time_factor``).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache

from kura.backends.kohakumoss.queries import MossArch
from kura.planning.gpus import GpuClass, get_gpu_class
from kura.sizing.steptime import TRAIN_CHECKPOINTED, TRAIN_PLAIN, compute_seconds

__all__ = [
    "LAYER_MAX_TOKENS",
    "MIN_TIME_BAND",
    "NAMED_BUNDLES",
    "README_SPEEDS",
    "MossStepTime",
    "ReadmeSpeed",
    "calibration_factor",
    "lora_params_at",
    "step_time",
]

README = "KohakuMoss 0.1.0 README (METADATA), speed/VRAM table (kohakumoss.md)"
TOKENS_PER_PIXEL = 1 / 256
"""One MOSS token per 16 x 16 pixels (1 MP = 4096 image tokens, kohakumoss.md)."""
CAPTION_TOKENS = 300
"""Text tokens of a typical caption (the catalog's 1 MP row: 4096 image + 300 text tokens,
kohakumoss.md ``catalog_table.py``)."""

MIN_TIME_BAND = 0.3
"""Full band width (a fraction of the step time) never narrower: three README cells on two
GPUs vouch for little more."""

BASE_ARCH = MossArch(
    dim=3072,
    depth=42,
    heads=24,
    ffn_dim=8192,
    text_dim=4096,
    text_blocks=2,
    latent_channels=128,
    freq_dim=256,
    negative_skip_layers=(),
    named_variants=("base",),
)
"""``PRESETS["base"]`` (kohakumoss.md: dim 3072, depth 42, heads 24, ffn 8192, 2 text
blocks; 5.08 B parameters); freq_dim does not enter the FLOPs."""


@dataclass(frozen=True)
class ReadmeSpeed:
    gpu: str
    profile: str
    samples_per_s: float


README_SPEEDS: tuple[ReadmeSpeed, ...] = (
    ReadmeSpeed("rtx-3090", "balanced", 0.39),
    ReadmeSpeed("rtx-5090", "balanced", 1.14),
    ReadmeSpeed("rtx-3090", "minimal", 0.37),
)
"""README cells, LoRA r32 at 1 MP, 8192 tokens, latent + text cache (kohakumoss.md)."""

README_LORA_PARAMS = 78.4e6
"""LoRA r32 on the base DiT (kohakumoss.md: ``catalog_table.lora_params``)."""


@dataclass(frozen=True)
class MossStepTime:
    """Seconds per optimizer step: FLOPs, the raw FLOPs time and the README's factor."""

    flops: float
    flops_seconds: float
    factor: float
    band: float
    grad_accum: int

    @property
    def step_s(self) -> float:
        return self.flops_seconds * self.factor * self.grad_accum


def _block_linear_params(arch: MossArch) -> float:
    return 4 * arch.dim**2 + 3 * arch.dim * arch.ffn_dim


def _flops(arch: MossArch, tokens: int, sample_tokens: int, lora: float, profile: str) -> float:
    mult = TRAIN_PLAIN if profile == "speed" else TRAIN_CHECKPOINTED
    linear = _block_linear_params(arch) * arch.depth
    per_token = (mult.linear * linear) + mult.lora * lora
    attention = mult.attention * sample_tokens * arch.dim * arch.depth
    return tokens * (per_token + attention)


def _raw_seconds(
    arch: MossArch, gpu: GpuClass, max_tokens: int, area: int, lora: float, profile: str
) -> tuple[float, float]:
    sample = min(max_tokens, round(area * TOKENS_PER_PIXEL) + CAPTION_TOKENS)
    flops = _flops(arch, max_tokens, sample, lora, profile)
    return flops, compute_seconds(flops, max_tokens, gpu)


@cache
def _ratios() -> tuple[float, ...]:
    """measured / FLOPs-estimated seconds per step for each README cell."""
    out = []
    area = 1024 * 1024
    sample = round(area * TOKENS_PER_PIXEL) + CAPTION_TOKENS
    for cell in README_SPEEDS:
        _, raw = _raw_seconds(
            BASE_ARCH, get_gpu_class(cell.gpu), 8192, area, README_LORA_PARAMS, cell.profile
        )
        measured = (8192 / sample) / cell.samples_per_s
        out.append(measured / raw)
    return tuple(out)


def calibration_factor() -> tuple[float, float]:
    """The README's median measured/estimated ratio, and the band (full width, a fraction)
    that holds every cell."""
    ratios = _ratios()
    factor = statistics.median(ratios)
    spread = max(abs(r / factor - 1) for r in ratios)
    return factor, max(MIN_TIME_BAND, 2 * spread)


def step_time(
    arch: MossArch,
    gpu: GpuClass,
    *,
    max_tokens: int,
    area: int,
    lora_params: float,
    profile: str,
    grad_accum: int = 1,
) -> MossStepTime:
    """Seconds per optimizer step of ``max_tokens`` tokens per micro-step on ``gpu``."""
    flops, raw = _raw_seconds(arch, gpu, max_tokens, area, lora_params, profile)
    factor, band = calibration_factor()
    return MossStepTime(flops, raw, factor, band, grad_accum)


NAMED_BUNDLES = frozenset({"moss-image-base", "moss-image-sft"})
"""Bundles of KohakuMoss's released variants: the base DiT's shape (``PRESETS``)."""

LAYER_MAX_TOKENS = {"24g": 12288, "8g": 4352}
"""MAX_TOKENS the generated VRAM layers set (kohakumoss.md: the 24g config balanced at
12288, the 8g config minimal at 4352); the other layers' budgets are read from the
environment by a run's plan."""


def lora_params_at(rank: int) -> float:
    """LoRA parameters of the base DiT at ``rank`` (linear in the rank: 78.4 M at r32)."""
    return README_LORA_PARAMS * rank / 32
