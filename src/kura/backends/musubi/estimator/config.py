"""What the estimator is asked about: one training configuration, as a frozen record.

:class:`EstimateConfig` mirrors the Musubi Tuner knobs that move memory or time (fp8 mode,
gradient checkpointing, block swap, rank, optimizer, attention, micro-batch …) plus the data
shape (buckets). :func:`validate_config` refuses combinations Musubi itself refuses, so an
estimate is never given for a run that could not start.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from kura.errors import InvalidInput, Unsupported
from kura.sizing.optimizers import get_optimizer
from kura.sizing.shapes import ModelShape, get_shape

__all__ = [
    "Attention",
    "Bucket",
    "EstimateConfig",
    "Fp8Mode",
    "GcMode",
    "Platform",
    "Precision",
    "validate_config",
]

Precision = Literal["bf16", "fp16"]
Fp8Mode = Literal["none", "base", "scaled"]
GcMode = Literal["off", "on", "cpu-offload"]
Attention = Literal["sdpa", "flash", "xformers", "sage"]
Platform = Literal["linux", "windows"]


@dataclass(frozen=True)
class Bucket:
    """One resolution bucket: pixels, frames (1 for images) and how many items it holds."""

    width: int
    height: int
    frames: int = 1
    count: int = 1

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class EstimateConfig:
    """One LoRA training configuration for Musubi Tuner, as far as memory and time care.

    ``micro_batch`` is the trainer's batch size per GPU; effective batch =
    ``micro_batch x grad_accum x gpu_count``. ``blocks_to_swap`` is Musubi's
    ``--blocks_to_swap`` count (for FLUX-style models a count of units, not blocks).
    ``text_tokens`` overrides the model's typical caption length (joint-sequence models).
    ``reference_images`` adds that many control/reference images at the bucket's size
    (Qwen-Image-Edit, FLUX.1 Kontext, FLUX.2 references).
    """

    model: str
    buckets: tuple[Bucket, ...] = (Bucket(1024, 1024),)
    micro_batch: int = 1
    grad_accum: int = 1
    precision: Precision = "bf16"
    fp8: Fp8Mode = "none"
    fp8_text_encoder: bool = False
    gradient_checkpointing: GcMode = "on"
    blocks_to_swap: int = 0
    swap_h2d_only: bool = False
    swap_ring_size: int = 2
    pinned_swap: bool = False
    rank: int = 32
    optimizer: str = "adamw8bit"
    attention: Attention = "sdpa"
    split_attn: bool = False
    cached_text_encoder: bool = True
    cached_latents: bool = True
    gpu_count: int = 1
    total_steps: int | None = None
    text_tokens: int | None = None
    reference_images: int = 0
    offload_inactive_dit: bool = False
    force_v2_1_time_embedding: bool = False
    platform: Platform = "linux"

    @classmethod
    def at_resolution(
        cls, model: str, width: int, height: int, frames: int = 1, **options: Any
    ) -> EstimateConfig:
        """A configuration with a single bucket of ``width x height (x frames)``."""
        return cls(model=model, buckets=(Bucket(width, height, frames),), **options)

    def replace(self, **changes: Any) -> EstimateConfig:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    @property
    def effective_batch(self) -> int:
        return self.micro_batch * self.grad_accum * self.gpu_count

    def to_dict(self) -> dict[str, Any]:
        doc = dataclasses.asdict(self)
        doc["buckets"] = [bucket.to_dict() for bucket in self.buckets]
        return doc


def _require(condition: bool, message: str, hint: str = "") -> None:
    if not condition:
        raise InvalidInput(message, hint=hint)


def validate_config(config: EstimateConfig) -> ModelShape:
    """Check ``config`` against its model and Musubi's rules; return the model's shape.

    Raises :class:`~kura.errors.NotFound` for an unknown model or optimizer,
    :class:`~kura.errors.InvalidInput` for impossible numbers and
    :class:`~kura.errors.Unsupported` for combinations Musubi refuses.
    """
    shape = get_shape(config.model)
    get_optimizer(config.optimizer)
    _require(bool(config.buckets), "at least one bucket is needed")
    for bucket in config.buckets:
        _require(
            bucket.width > 0 and bucket.height > 0 and bucket.frames > 0 and bucket.count >= 0,
            f"bucket {bucket} has a non-positive size",
        )
    _require(config.micro_batch >= 1, "micro_batch must be >= 1")
    _require(config.grad_accum >= 1, "grad_accum must be >= 1")
    _require(config.gpu_count >= 1, "gpu_count must be >= 1")
    _require(config.rank >= 1, "rank must be >= 1")
    _require(config.swap_ring_size >= 1, "swap_ring_size must be >= 1")
    _require(config.reference_images >= 0, "reference_images must be >= 0")
    _require(
        0 <= config.blocks_to_swap <= shape.swap_limit,
        f"blocks_to_swap {config.blocks_to_swap} is outside 0..{shape.swap_limit} for {shape.id}",
        hint=f"Musubi's limit for {shape.title} is {shape.swap_limit}",
    )
    if config.fp8 not in shape.fp8_modes:
        raise Unsupported(
            f"{shape.id} cannot train with fp8 mode {config.fp8!r}",
            hint="supported: " + ", ".join(shape.fp8_modes),
        )
    if config.attention == "sage":
        raise Unsupported(
            "SageAttention has no backward pass; Musubi refuses --sage_attn for training",
            hint="use sdpa, flash or xformers",
        )
    if config.swap_h2d_only and config.gradient_checkpointing == "off":
        raise Unsupported(
            "--block_swap_h2d_only requires gradient checkpointing",
            hint="turn gradient checkpointing on or use classic block swap",
        )
    if config.gradient_checkpointing == "cpu-offload" and not shape.gc_cpu_offload:
        raise Unsupported(
            f"activation CPU offload is not available for {shape.id} in Musubi 0.3.4",
            hint="use gradient checkpointing without offload",
        )
    if not (config.cached_text_encoder and config.cached_latents):
        raise Unsupported(
            "Musubi trains only from cached latents and cached text-encoder outputs",
            hint="run the caching scripts first; the encoders are not resident in training",
        )
    if shape.experts > 1 and config.offload_inactive_dit and config.blocks_to_swap > 0:
        raise Unsupported(
            "--offload_inactive_dit cannot be combined with block swap",
            hint="block swap already keeps the inactive expert in CPU RAM",
        )
    return shape
