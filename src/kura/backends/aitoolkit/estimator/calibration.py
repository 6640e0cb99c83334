"""What AI-Toolkit publishes about memory, as one table of points the estimator is held to.

Published example configs are named for the card they fit
(``config/examples/train_lora_*_{24gb,32gb,48}.yaml`` at 27a03a9): each is a ``fits`` point on
that card. Reports with a measured peak are ``measured`` points; a report that ran out of
memory is an ``oom`` point. ``held_out`` points take no part in the band: they measure it
(:func:`held_out_median_error`). Settings a report leaves out are AI-Toolkit's or the UI's
defaults and are listed in ``assumed``.

Excluded: ``train_lora_hidream_48.yaml`` (HiDream-I1): Kura has no HiDream-I1 bundle
(``kura model bundles`` lists only HiDream-O1, a different model), so no plan can be held
to it. SDXL has no published AI-Toolkit example: its point is an sd-scripts report on the
same UNet and text encoders.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from kura.backends.aitoolkit.estimator.setup import AitkSetup, Bucket
from kura.backends.aitoolkit.knobs import Knobs
from kura.planning.gpus import get_gpu_class
from kura.sizing.shapes import get_shape

__all__ = [
    "POINTS",
    "CalibrationPoint",
    "PointResult",
    "band_fraction",
    "evaluate_points",
    "held_out_median_error",
]

Outcome = Literal["fits", "measured", "oom"]
GB = 1e9 / 2**30
_EX = "ai-toolkit 27a03a9 config/examples/"


@dataclass(frozen=True)
class CalibrationPoint:
    name: str
    shape: str
    arch: str
    knobs: Mapping[str, object]
    rank: int
    optimizer: str
    bucket: Bucket
    sample: Bucket | None
    outcome: Outcome
    gpu: str
    """The card it fits or ran out of memory on (``kura.planning.gpus``), or the measured one."""
    source: str
    measured_gib: float | None = None
    """A measured training peak (``measured`` points)."""
    control: bool = False
    two_experts: bool = False
    held_out: bool = False
    assumed: tuple[str, ...] = field(default_factory=tuple)

    def setup(self) -> AitkSetup:
        return AitkSetup(
            shape=get_shape(self.shape),
            arch=self.arch,
            knobs=Knobs.model_validate(dict(self.knobs)),
            rank=self.rank,
            optimizer=self.optimizer,
            buckets=(self.bucket,),
            control=self.control,
            two_experts=self.two_experts,
            sample=self.sample,
            sample_first=self.sample is not None,
        )


_LOW = {"gradient_checkpointing": True, "low_vram": True, "quantize": True, "quantize_te": True}
_CACHED = {**_LOW, "cache_text_embeddings": True}
_ARA3 = {**_CACHED, "qtype": "uint3", "accuracy_recovery_adapter": True}
_ARA4 = {**_CACHED, "qtype": "uint4", "accuracy_recovery_adapter": True}
_Q8 = {"gradient_checkpointing": True, "quantize": True, "quantize_te": True}
_SQ = Bucket(1024, 1024)
_480P = Bucket(832, 480, 40)
_TE_DEFAULT = "quantize_te defaults to quantize (ai-toolkit.md §3c)"
_P = CalibrationPoint

# fmt: off
POINTS: tuple[CalibrationPoint, ...] = (
    # name, shape, arch, knobs, rank, optimizer, largest bucket, sample, outcome, gpu, source
    _P("qwen_image_24gb", "qwen-image", "qwen_image", _ARA3, 16, "adamw8bit", _SQ, _SQ,
       "fits", "rtx-4090", _EX + "train_lora_qwen_image_24gb.yaml"),
    _P("qwen_image_edit_32gb", "qwen-image", "qwen_image_edit", _ARA3, 16, "adamw8bit", _SQ, _SQ,
       "fits", "rtx-5090", _EX + "train_lora_qwen_image_edit_32gb.yaml", control=True),
    _P("qwen_image_edit_2509_32gb", "qwen-image", "qwen_image_edit_plus", _ARA3, 16, "adamw8bit",
       _SQ, _SQ, "fits", "rtx-5090", _EX + "train_lora_qwen_image_edit_2509_32gb.yaml",
       control=True, held_out=True),
    _P("wan22_14b_24gb", "wan2.2-a14b-single", "wan22_14b", _ARA4, 32, "adamw8bit", _SQ, _SQ,
       "fits", "rtx-4090", _EX + "train_lora_wan22_14b_24gb.yaml", two_experts=True),
    _P("flux_24gb", "flux1-kontext-dev", "flux_kontext", _Q8, 16, "adamw8bit", _SQ, _SQ,
       "fits", "rtx-4090", _EX + "train_lora_flux_24gb.yaml",
       assumed=("FLUX.1-dev's DiT is FLUX.1 Kontext's without the control tokens", _TE_DEFAULT)),
    _P("flux_kontext_24gb", "flux1-kontext-dev", "flux_kontext", _Q8, 16, "adamw8bit",
       Bucket(768, 768), _SQ, "fits", "rtx-4090", _EX + "train_lora_flux_kontext_24gb.yaml",
       control=True, assumed=(_TE_DEFAULT,)),
    _P("flux_24gb_on_16gb", "flux1-kontext-dev", "flux_kontext", _Q8, 16, "adamw8bit", _SQ, _SQ,
       "oom", "rtx-4070-ti-super",
       "ostris/ai-toolkit #148 (16 GB cards: the 24 GB settings stall in the baseline sample, "
       "spilling to shared memory)",
       assumed=("the thread's settings are the flux 24 GB example's",)),
    _P("wan21_14b_24gb", "wan2.1-t2v-14b", "wan21", {**_LOW, "unload_text_encoder": True}, 32,
       "adamw8bit", Bucket(632, 632), _480P, "fits", "rtx-4090",
       _EX + "train_lora_wan21_14b_24gb.yaml"),
    _P("wan21_1b_24gb", "wan2.1-1.3b", "wan21", {"gradient_checkpointing": True,
       "quantize_te": True}, 32, "adamw8bit", Bucket(632, 632), _480P, "fits", "rtx-4090",
       _EX + "train_lora_wan21_1b_24gb.yaml", held_out=True),
    _P("flux1_rank256_bf16", "flux1-kontext-dev", "flux_kontext",
       {"gradient_checkpointing": True, "quantize_te": True}, 256, "adamw8bit", _SQ, None,
       "measured", "rtx-a6000", "vram.md §3.2 row 38 (Ostris post, quoted on mike.gold notes)",
       measured_gib=38.5 * GB, held_out=True,
       assumed=("a 48 GB card", "1024 px", "AdamW8bit (the examples' optimizer)")),
    _P("zimage_turbo_12gb", "zimage", "zimage", _CACHED, 32, "adamw8bit", Bucket(768, 768), None,
       "fits", "rtx-3060-12g", "vram.md §3.2 row 44 (ostris/ai-toolkit #550: 512-768 px fit 12 GB)",
       held_out=True,
       assumed=("the UI's defaults: qfloat8 DiT and encoder, low_vram, cached captions, rank 32",)),
    _P("qwen_image_16gb", "qwen-image", "qwen_image", _ARA3, 16, "adamw8bit", _SQ, None,
       "measured", "rtx-4070-ti-super",
       "ostris/ai-toolkit #872 (Luffitys: ~11.5 GB in training on a 16 GB 5070 Ti at 75781fb)",
       measured_gib=11.5 * GB, held_out=True,
       assumed=("the UI's Qwen-Image preset (uint3 + adapter, low_vram, cached captions)",
                "1024 px, rank 16; nvidia-smi's reading in training")),
    _P("chroma_24gb", "chroma1", "chroma", _Q8, 16, "adamw8bit", _SQ, _SQ,
       "fits", "rtx-4090", _EX + "train_lora_chroma_24gb.yaml",
       assumed=(_TE_DEFAULT, "its EMA of the LoRA (use_ema) adds ~0.2 GiB, not counted")),
    _P("sdxl_12gb_sd_scripts", "sdxl-unet", "sdxl", {"gradient_checkpointing": True}, 64,
       "adamw8bit", _SQ, None, "fits", "rtx-3060-12g",
       "FurkanGozukara/Stable-Diffusion #24 (sd-scripts SDXL LoRA, network rank 64, "
       "trained with 12 GB; the same UNet and text encoders as AI-Toolkit's SDXL class)",
       assumed=("sd-scripts, not AI-Toolkit", "1024 px, UNet-only LoRA, gradient "
                "checkpointing, AdamW8bit, no sampling")),
)
# fmt: on


@dataclass(frozen=True)
class PointResult:
    point: CalibrationPoint
    predicted_gib: float
    """The worst step's peak (fits, oom); the training peak (measured)."""

    @property
    def usable_gib(self) -> float:
        return get_gpu_class(self.point.gpu).usable_gib

    @property
    def error(self) -> float | None:
        """predicted / measured - 1 for a measured point."""
        if self.point.measured_gib is None:
            return None
        return self.predicted_gib / self.point.measured_gib - 1

    @property
    def shortfall(self) -> float:
        """How far below the card an OOM point is predicted (0 when it is above)."""
        if self.point.outcome != "oom":
            return 0.0
        return max(0.0, 1 - self.predicted_gib / self.usable_gib)


@cache
def evaluate_points() -> tuple[PointResult, ...]:
    from kura.backends.aitoolkit.estimator.memory import step_memories

    results = []
    for point in POINTS:
        steps = step_memories(point.setup())
        if point.outcome == "measured":
            steps = tuple(m for m in steps if m.kind == "train")
        results.append(PointResult(point, max(m.peak_gib for m in steps)))
    return tuple(results)


def held_out_median_error() -> float | None:
    """Median |predicted / measured - 1| over the held-out measured points (the published
    fits bound the peak from above only: they are checked, not measured)."""
    errors = [abs(r.error) for r in evaluate_points() if r.point.held_out and r.error is not None]
    return statistics.median(errors) if errors else None


DEFAULT_BAND = 0.30
"""Full band width when an architecture has no measured point: the published examples bound
the peak from above only."""


MIN_BAND = 0.10
"""No band is narrower: a published fit bounds the peak from above, not from below."""

WIDER_BANDS: Mapping[str, tuple[float, str]] = {
    "sdxl": (0.50, "SDXL's UNet is approximated by level (kura.sizing.shapes sdxl-unet)"),
}
"""Architectures whose shape is an approximation start from a wider band."""


@cache
def band_fraction(architecture: str) -> tuple[float, str]:
    """Full band width (fraction of the peak) for ``architecture`` and why: the default,
    widened to twice the worst calibration error, narrowed (to :data:`MIN_BAND` at most) so a
    published example's upper edge stays within the card it is published for, and widened
    again to cover an OOM report (which wins: an OOM configuration never fits)."""
    mine = [
        r
        for r in evaluate_points()
        if get_shape(r.point.shape).architecture == architecture and not r.point.held_out
    ]
    band, why = WIDER_BANDS.get(architecture, (DEFAULT_BAND, ""))
    reason = f"{len(mine)} calibration point(s) for {architecture} in AI-Toolkit"
    if why:
        reason += f", {why}"
    worst = max((abs(r.error or 0.0) for r in mine), default=0.0)
    if 2 * worst > band:
        band = 2 * worst
        reason += f", worst error {worst:.0%}"
    for r in mine:
        if r.point.outcome != "fits":
            continue
        room = max(MIN_BAND, 2 * (r.usable_gib / r.predicted_gib - 1))
        if room < band:
            band = room
            reason += f", narrowed so {r.point.name} (published to fit) fits its card"
    shortfall = max((r.shortfall for r in mine), default=0.0)
    if shortfall and 2 * shortfall + 0.02 > band:
        band = 2 * shortfall + 0.02
        reason += f", an OOM report {shortfall:.0%} above the prediction"
    return math.floor(band * 1000) / 1000, reason
