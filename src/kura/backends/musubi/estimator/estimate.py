"""The estimate: peak VRAM with its band, host RAM, step time and whether it fits.

``estimate(config, gpu)`` is pure: it validates the configuration, sizes every bucket,
computes the memory terms at the largest bucket (:mod:`.memory`), the band from the
calibration points (:mod:`.calibration`) and, given a GPU class, the step time
(:mod:`.steptime`) and the fit.

Fit rule: ``peak + band / 2 <= usable`` with usable = 95 % of the card's memory. The upper
half of the band covers the worst calibration miss of the architecture, and the 5 % keeps
allocator fragmentation and Windows' silent spill to shared memory (vram.md §4.6) out of the
plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kura.backends.musubi.estimator.calibration import band_fraction
from kura.backends.musubi.estimator.config import EstimateConfig
from kura.backends.musubi.estimator.memory import ALPHA, host_ram, lora_params, peak_memory
from kura.backends.musubi.estimator.steptime import StepTime, step_time
from kura.backends.musubi.estimator.tokens import BucketTokens
from kura.planning.gpus import GpuClass
from kura.sizing.optimizers import get_optimizer
from kura.sizing.shapes import GIB

__all__ = ["Estimate", "estimate"]

OPTIMIZER_TEMPORARY_BYTES = 4
"""foreach optimizers allocate up to ~1x the fp32 parameter list at the step (vram.md §4.2)."""


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class Estimate:
    """What the estimator says about one configuration (GiB, seconds, hours)."""

    model: str
    architecture: str
    gpu: str | None
    peak_vram_gib: float
    band_gib: float
    host_ram_gib: float
    step_seconds: float | None
    total_hours: float | None
    fits: bool | None
    usable_gib: float | None
    tokens: tuple[BucketTokens, ...]
    largest_bucket: BucketTokens
    breakdown: dict[str, float]
    swapped_blocks: dict[str, int]
    step: StepTime | None
    bucket_step_seconds: tuple[float, ...]
    confidence: str
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    config: EstimateConfig | None = None
    trainer_report: tuple[Mapping[str, Any], ...] = ()
    """Sections the backend adds to plan.md (``{title, lines}``): which trainer install the
    run uses, and any step a person's command replaced."""

    @property
    def upper_gib(self) -> float:
        """The band's upper edge: what the fit rule compares with usable memory."""
        return self.peak_vram_gib + self.band_gib / 2

    def to_dict(self) -> dict[str, Any]:
        step = None
        if self.step is not None:
            step = {
                "flops": self.step.flops,
                "mfu": _r(self.step.mfu, 3),
                "compute_s": _r(self.step.compute_s, 3),
                "dequant_s": _r(self.step.dequant_s, 3),
                "transfer_s": _r(self.step.transfer_s, 3),
                "exposed_transfer_s": _r(self.step.exposed_transfer_s, 3),
                "allreduce_s": _r(self.step.allreduce_s, 3),
                "micro_steps": self.step.micro_steps,
            }
        document: dict[str, Any] = {
            "kind": "run-estimate",
            "model": self.model,
            "architecture": self.architecture,
            "gpu": self.gpu,
            "peak_vram_gib": _r(self.peak_vram_gib),
            "band_gib": _r(self.band_gib),
            "upper_gib": _r(self.upper_gib),
            "usable_gib": _r(self.usable_gib),
            "fits": self.fits,
            "host_ram_gib": _r(self.host_ram_gib),
            "step_seconds": _r(self.step_seconds, 3),
            "total_hours": _r(self.total_hours, 3),
            "tokens": [item.to_dict() for item in self.tokens],
            "largest_bucket": self.largest_bucket.to_dict(),
            "breakdown": {key: _r(value) for key, value in self.breakdown.items()},
            "swapped_blocks": dict(self.swapped_blocks),
            "step": step,
            "bucket_step_seconds": [_r(value, 3) for value in self.bucket_step_seconds],
            "confidence": self.confidence,
            "assumptions": list(self.assumptions),
            "config": None if self.config is None else self.config.to_dict(),
        }
        if self.trainer_report:
            document["trainer_report"] = [dict(section) for section in self.trainer_report]
        return document


def _assumptions(config: EstimateConfig, shape_notes: tuple[str, ...]) -> list[str]:
    notes = [
        "Latents and text-encoder outputs are cached: no VAE or text encoder is resident "
        "during training"
        + (" (fp8_text_encoder has no effect on it)." if config.fp8_text_encoder else "."),
        "Training only: sampling during training is sized and timed as its own step (the "
        "plan's sample step, at each prompt's size; VAE decoding of video can set the peak).",
        f"Recompute/backward transient alpha = {ALPHA} over one block's saved tensors "
        "(vram.md §0).",
        "Reported GB are read as GiB (vram.md units); the band covers ±5 % of that ambiguity.",
    ]
    if config.precision == "fp16":
        notes.append("fp16 mixed precision costs the same bytes as bf16.")
    optimizer = get_optimizer(config.optimizer)
    notes.append(f"Optimizer {optimizer.id}: {optimizer.source}.")
    notes.extend(shape_notes)
    return notes


def _mean_step(tokens: tuple[BucketTokens, ...], seconds: tuple[float, ...]) -> float:
    """Step time averaged over buckets weighted by item count (equal weights if none)."""
    counts = [item.bucket.count for item in tokens]
    if sum(counts) <= 0:
        counts = [1] * len(tokens)
    return sum(c * t for c, t in zip(counts, seconds, strict=True)) / sum(counts)


def estimate(config: EstimateConfig, gpu: GpuClass | None = None) -> Estimate:
    """Estimate peak memory, host RAM and (given ``gpu``) step time and fit for ``config``."""
    peak = peak_memory(config)
    shape, memory = peak.shape, peak.breakdown
    fraction, band_reason = band_fraction(shape)
    peak_gib = memory.peak
    band = fraction * peak_gib
    host = host_ram(shape, config, memory)
    assumptions = _assumptions(config, shape.notes)
    if not shape.musubi_trainable:
        assumptions.append(f"{shape.title} is not trainable in Musubi Tuner 0.3.4.")
    temporaries = lora_params(shape, config.rank) * OPTIMIZER_TEMPORARY_BYTES / GIB
    if temporaries > memory.activations + memory.dequant_copies:
        assumptions.append(
            f"Optimizer-step temporaries (~{temporaries:.1f} GiB at rank {config.rank}) exceed "
            "the activations they replace: the optimizer step may set the peak (not modelled; "
            "vram.md open question 9)."
        )
    step: StepTime | None = None
    step_seconds = total_hours = None
    fits = usable = None
    bucket_seconds: tuple[float, ...] = ()
    if gpu is not None:
        step = step_time(shape, config, peak.largest, memory, gpu)
        bucket_seconds = tuple(
            step_time(shape, config, tokens, memory, gpu).step_s for tokens in peak.tokens
        )
        step_seconds = _mean_step(peak.tokens, bucket_seconds)
        if config.total_steps is not None:
            total_hours = config.total_steps * step_seconds / 3600
        usable = gpu.usable_gib
        fits = peak_gib + band / 2 <= usable
        assumptions.append(
            f"Step time from FLOPs at MFU {step.mfu:.2f} of {gpu.bf16_tflops:.0f} bf16 "
            "TFLOP/s (largest bucket), averaged over the buckets by their item counts "
            "(each step draws its batch from one bucket)."
        )
    breakdown = {
        "weights": memory.weights + memory.dequant_copies,
        "lora_and_optimizer": memory.lora_and_optimizer,
        "activations": memory.checkpoints + memory.working_set + memory.extras,
        "swap_buffers": 0.0,
        "context": memory.context,
        "checkpoints": memory.checkpoints,
        "working_set": memory.working_set,
        "extras": memory.extras,
        "dequant_copies": memory.dequant_copies,
    }
    if memory.ring_gib:
        breakdown["swap_buffers"] = memory.ring_gib
        breakdown["weights"] -= memory.ring_gib
    confidence = (
        f"band ±{fraction / 2:.0%} ({band_reason}); activations "
        f"{shape.activation_source} for {shape.id}"
    )
    return Estimate(
        model=shape.id,
        architecture=shape.architecture,
        gpu=None if gpu is None else gpu.id,
        peak_vram_gib=peak_gib,
        band_gib=band,
        host_ram_gib=host.peak,
        step_seconds=step_seconds,
        total_hours=total_hours,
        fits=fits,
        usable_gib=usable,
        tokens=peak.tokens,
        largest_bucket=peak.largest,
        breakdown=breakdown,
        swapped_blocks=memory.swapped_blocks,
        step=step,
        bucket_step_seconds=bucket_seconds,
        confidence=confidence,
        assumptions=tuple(assumptions),
        config=config,
    )
