"""Calibration points: measured Musubi Tuner peaks (and OOMs) the estimator is held to.

Each :class:`CalibrationPoint` is one report from vram.md §3 (or peers.md §3) written as an
:class:`EstimateConfig` with its source. Settings a report leaves out use Musubi's doc
defaults and are listed in ``assumed``. The points serve three purposes:

* ``bench/estimator_accuracy.py`` prints estimate vs. measured and the median error;
* the uncertainty band of each architecture comes from how well its points fit
  (:func:`band_fraction`): an architecture with many close points gets a narrow band, one
  with few, poorly fitting or no points a wide one, and an out-of-memory report widens its
  architecture's band until the reported configuration no longer fits;
* tests assert that no OOM-reported configuration is ever said to fit.

Points from other trainers (sd-scripts, diffusion-pipe, OneTrainer) are not used: their
resident text encoders and different LoRA precision put them 10+ GiB off (vram.md §3.3).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import cache
from typing import Literal

from kura.backends.musubi.estimator.config import Bucket, EstimateConfig
from kura.backends.musubi.estimator.memory import peak_memory
from kura.planning.gpus import get_gpu_class
from kura.sizing.shapes import ModelShape

__all__ = [
    "MEMORY_POINTS",
    "TIME_POINTS",
    "CalibrationPoint",
    "PointResult",
    "TimePoint",
    "band_fraction",
    "evaluate_memory_points",
    "median_abs_error",
]

Outcome = Literal["measured", "oom", "fits"]

_QWEN_DOC = "musubi docs/qwen_image.md 'VRAM Usage Estimates' (vram.md §3.1 rows 1-4)"
QWEN_TABLE_RANK_NOTE = (
    "rank 16, AdamW8bit: the table states no rank; the doc example at the table's commit "
    "(36f3a98, 2025-08-10) used --network_dim 32, changed to 16 on 2025-08-21 (82c5ce1); "
    "rank 16 fits all four rows within 0.8 GiB, rank 32 sits 1.4-2.1 GiB above them"
)
QWEN_TABLE_FP8_NOTE = (
    "fp8_scaled before PR #575 (2025-09-23): the table dates from 2025-08-10, when "
    "qwen_image_model.py FP8_OPTIMIZATION_EXCLUDE_KEYS held '_mod' (img_mod/txt_mod stayed "
    "bf16); Musubi 0.3.4 quantizes them, so today's run needs ~6 GiB less"
)
_WAN_DOC = "musubi docs/wan.md overview: 'training with 720x1280 images with 24GB VRAM'"
_ISSUE_715 = "musubi issue #715 (vram.md §3.1 row 6; peers.md §3)"
_PR_492 = "musubi PR #492 comment (vram.md §3.1 rows 10-11)"
_PR_537 = "musubi PR #537 table (vram.md §3.1 rows 16-18)"
_ISSUE_985 = "musubi issue #985 (vram.md §3.1 row 29)"

_SQUARE_1024 = (Bucket(1024, 1024),)
_SQUARE_1328 = (Bucket(1328, 1328),)


@dataclass(frozen=True)
class CalibrationPoint:
    """One memory report: the configuration, what happened, and where it was reported."""

    id: str
    config: EstimateConfig
    outcome: Outcome
    source: str
    measured_gib: float | None = None
    gpu: str | None = None
    assumed: tuple[str, ...] = ()


@dataclass(frozen=True)
class TimePoint:
    """One step-time report (seconds per optimizer step) on a catalog GPU class."""

    id: str
    config: EstimateConfig
    gpu: str
    measured_s: float
    source: str
    assumed: tuple[str, ...] = ()


@dataclass(frozen=True)
class PointResult:
    """A memory point next to the estimator's prediction."""

    point: CalibrationPoint
    architecture: str
    predicted_gib: float

    @property
    def error(self) -> float | None:
        """Relative error (predicted / measured - 1), for measured points."""
        if self.point.measured_gib is None:
            return None
        return self.predicted_gib / self.point.measured_gib - 1

    @property
    def shortfall(self) -> float:
        """For an OOM point: how far the prediction falls short of the card's memory."""
        if self.point.outcome != "oom" or self.point.gpu is None:
            return 0.0
        memory = get_gpu_class(self.point.gpu).memory_gib
        return max(0.0, memory / self.predicted_gib - 1)


def _qwen(model: str = "qwen-image", **options: object) -> EstimateConfig:
    defaults: dict[str, object] = {
        "buckets": _SQUARE_1024,
        "rank": 16,
        "optimizer": "adamw8bit",
        "attention": "xformers",
        "split_attn": True,
    }
    defaults.update(options)
    return EstimateConfig(model=model, **defaults)  # type: ignore[arg-type]


MEMORY_POINTS: tuple[CalibrationPoint, ...] = (
    CalibrationPoint(
        "qwen-1024-bf16",
        _qwen(),
        "measured",
        _QWEN_DOC,
        measured_gib=42.0,
        assumed=(QWEN_TABLE_RANK_NOTE,),
    ),
    CalibrationPoint(
        "qwen-1024-fp8",
        _qwen("qwen-image-2025-08", fp8="scaled"),
        "measured",
        _QWEN_DOC,
        measured_gib=30.0,
        assumed=(QWEN_TABLE_RANK_NOTE, QWEN_TABLE_FP8_NOTE),
    ),
    CalibrationPoint(
        "qwen-1024-fp8-swap16",
        _qwen("qwen-image-2025-08", fp8="scaled", blocks_to_swap=16),
        "measured",
        _QWEN_DOC,
        measured_gib=24.0,
        assumed=(QWEN_TABLE_RANK_NOTE, QWEN_TABLE_FP8_NOTE),
    ),
    CalibrationPoint(
        "qwen-1024-fp8-swap45",
        _qwen("qwen-image-2025-08", fp8="scaled", blocks_to_swap=45),
        "measured",
        _QWEN_DOC,
        measured_gib=12.0,
        assumed=(QWEN_TABLE_RANK_NOTE, QWEN_TABLE_FP8_NOTE),
    ),
    CalibrationPoint(
        "qwen-1328-r128-adafactor",
        _qwen(buckets=_SQUARE_1328, fp8="scaled", rank=128, optimizer="adafactor"),
        "measured",
        _ISSUE_715,
        measured_gib=35.0,
        assumed=("attention xformers + split_attn",),
    ),
    CalibrationPoint(
        "qwen-1328-r128-adafactor-swap7",
        _qwen(
            buckets=_SQUARE_1328, fp8="scaled", rank=128, optimizer="adafactor", blocks_to_swap=7
        ),
        "measured",
        _ISSUE_715,
        measured_gib=31.2,
        assumed=("attention xformers + split_attn",),
    ),
    CalibrationPoint(
        "qwen-1328-r4-adafactor",
        _qwen(buckets=_SQUARE_1328, fp8="scaled", rank=4, optimizer="adafactor"),
        "measured",
        _ISSUE_715,
        measured_gib=25.0,
        assumed=("attention xformers + split_attn", "no block swap"),
    ),
    CalibrationPoint(
        "qwen-1328-r128-adafactor-maxswap",
        _qwen(
            "qwen-image-2025-08",
            buckets=_SQUARE_1328,
            fp8="scaled",
            rank=128,
            optimizer="adafactor",
            blocks_to_swap=59,
        ),
        "measured",
        _PR_492,
        measured_gib=14.5,
        assumed=("'minimum' read as the maximum swap, 59", "fp8_scaled before PR #575"),
    ),
    CalibrationPoint(
        "qwen-1328-r128-adamw8bit-maxswap",
        _qwen(
            "qwen-image-2025-08",
            buckets=_SQUARE_1328,
            fp8="scaled",
            rank=128,
            optimizer="adamw8bit",
            blocks_to_swap=59,
        ),
        "measured",
        _PR_492,
        measured_gib=16.5,
        assumed=("'minimum' read as the maximum swap, 59", "fp8_scaled before PR #575"),
    ),
    CalibrationPoint(
        "wan21-720p-image-fp8-24gb",
        EstimateConfig.at_resolution("wan2.1-t2v-14b", 1280, 720, fp8="scaled", blocks_to_swap=10),
        "fits",
        _WAN_DOC + " (vram.md §3.1 row 22)",
        gpu="rtx-4090",
        assumed=(
            "'fp8 support and memory reduction by block swap': fp8 scaled, 10 blocks swapped",
            "rank 32, AdamW8bit",
        ),
    ),
    CalibrationPoint(
        "hv-720p-41f-fp8",
        EstimateConfig.at_resolution("hunyuan-video", 1280, 720, 41, fp8="base"),
        "measured",
        _PR_537,
        measured_gib=42.7,
        assumed=("rank 32, AdamW8bit (doc example)", "sdpa without split_attn (doc example)"),
    ),
    CalibrationPoint(
        "hv-720p-41f-fp8-offload",
        EstimateConfig.at_resolution(
            "hunyuan-video", 1280, 720, 41, fp8="base", gradient_checkpointing="cpu-offload"
        ),
        "measured",
        _PR_537,
        measured_gib=31.9,
        assumed=("rank 32, AdamW8bit (doc example)", "sdpa without split_attn (doc example)"),
    ),
    CalibrationPoint(
        "wan22-720p-25f-fp8",
        EstimateConfig.at_resolution("wan2.2-a14b-single", 1280, 720, 25, fp8="scaled"),
        "measured",
        _PR_537,
        measured_gib=46.4,
        assumed=("rank 32, AdamW8bit (doc example)", "one expert resident"),
    ),
    CalibrationPoint(
        "framepack-640",
        EstimateConfig.at_resolution("framepack", 640, 640, 33, fp8="base", blocks_to_swap=36),
        "measured",
        "musubi docs/framepack.md 'around 17GB' (vram.md §3.1 row 23)",
        measured_gib=17.0,
        assumed=(
            "fp8 + swap 36 (vram.md's reading of the doc)",
            "latent window 9 (33 frames)",
            "rank 32, AdamW8bit",
        ),
    ),
    CalibrationPoint(
        "krea2-1024-swap20-h2d",
        EstimateConfig.at_resolution(
            "krea2",
            1024,
            1024,
            fp8="scaled",
            blocks_to_swap=20,
            swap_h2d_only=True,
            platform="windows",
        ),
        "oom",
        _ISSUE_985 + ", user D3voz, 16 GB VRAM / 48 GB RAM, Windows",
        gpu="rtx-5080",
        assumed=("rank 32, AdamW8bit (doc example)",),
    ),
    CalibrationPoint(
        "krea2-768-r16-swap20-h2d",
        EstimateConfig.at_resolution(
            "krea2",
            768,
            768,
            fp8="scaled",
            rank=16,
            blocks_to_swap=20,
            swap_h2d_only=True,
            platform="windows",
        ),
        "fits",
        _ISSUE_985 + " ('only able to do it on 16gb with 768 res and 16 alpha/dim')",
        gpu="rtx-5080",
        assumed=("same flags as the 1024 attempt", "AdamW8bit"),
    ),
)

TIME_POINTS: tuple[TimePoint, ...] = (
    TimePoint(
        "qwen-3090-swap40-classic",
        _qwen(fp8="scaled", blocks_to_swap=40),
        "rtx-3090",
        14.0,
        "musubi docs/block_swap.md (vram.md §3.1 row 12), s/sample",
        assumed=("1024 px", "fp8 scaled", "rank 16"),
    ),
    TimePoint(
        "qwen-3090-swap40-h2d",
        _qwen(fp8="scaled", blocks_to_swap=40, swap_h2d_only=True),
        "rtx-3090",
        11.0,
        "musubi docs/block_swap.md, PR #972 (vram.md §3.1 row 13), s/sample",
        assumed=("1024 px", "fp8 scaled", "rank 16"),
    ),
    TimePoint(
        "wan22-4090-512-bs4-swap29",
        EstimateConfig.at_resolution(
            "wan2.2-a14b-single",
            512,
            512,
            micro_batch=4,
            rank=4,
            precision="fp16",
            fp8="scaled",
            blocks_to_swap=29,
        ),
        "rtx-4090",
        8.0,
        "musubi issue #632 (vram.md §3.1 row 21), before PR #585",
        assumed=("fp8 scaled", "AdamW8bit"),
    ),
    TimePoint(
        "framepack-4090-640-offload",
        EstimateConfig.at_resolution(
            "framepack",
            640,
            640,
            33,
            fp8="scaled",
            attention="flash",
            gradient_checkpointing="cpu-offload",
        ),
        "rtx-4090",
        30.0,
        "musubi issue #650 (vram.md §3.1 row 24)",
        assumed=("fp8 scaled", "rank 32", "latent window 9"),
    ),
    TimePoint(
        "flux1-a6000-1024-r128",
        EstimateConfig.at_resolution("flux1-kontext-dev", 1024, 1024, rank=128),
        "rtx-a6000",
        8.25,
        "sd-scripts PR #1374 (vram.md §3.2 row 33; FLUX.1 dev, same DiT shapes)",
        assumed=("other trainer: compute comparable, memory not", "AdamW8bit"),
    ),
)


def _default_band(activation_source: str, measured_points: int) -> float:
    """Band (full width, fraction of peak) before looking at residuals."""
    by_source = {"measured": 0.25, "estimated": 0.35, "assumed": 0.50}[activation_source]
    if measured_points >= 3:
        by_points = 0.10
    elif measured_points:
        by_points = 0.20
    else:
        return by_source
    # Points of a sibling model do not vouch for a coefficient nobody measured.
    return by_points if activation_source == "measured" else max(by_points, by_source)


@cache
def evaluate_memory_points() -> tuple[PointResult, ...]:
    """Every memory point with the estimator's predicted peak."""
    results = []
    for point in MEMORY_POINTS:
        peak = peak_memory(point.config)
        results.append(PointResult(point, peak.shape.architecture, peak.breakdown.peak))
    return tuple(results)


def median_abs_error(results: tuple[PointResult, ...] | None = None) -> float:
    """Median |predicted / measured - 1| over the measured points."""
    results = evaluate_memory_points() if results is None else results
    errors = [abs(result.error) for result in results if result.error is not None]
    return statistics.median(errors)


def band_fraction(shape: ModelShape) -> tuple[float, str]:
    """Full band width as a fraction of the peak for ``shape``, and why.

    ``max(default, 2 x worst |error|, 2 x OOM shortfall)`` over the architecture's points,
    so the band's upper half covers every measurement and every OOM of that architecture.
    The default depends on how many measured points the architecture has and, without any,
    on whether the model's activation coefficient was measured, estimated or assumed.
    """
    return _band(shape.architecture, shape.activation_source)


@cache
def _band(architecture: str, activation_source: str) -> tuple[float, str]:
    mine = [r for r in evaluate_memory_points() if r.architecture == architecture]
    measured = [r for r in mine if r.error is not None]
    band = _default_band(activation_source, len(measured))
    reason = f"{len(measured)} measured point(s) for {architecture}"
    worst = max((abs(r.error or 0.0) for r in measured), default=0.0)
    if 2 * worst > band:
        band = 2 * worst
        reason += f", worst error {worst:.0%}"
    shortfall = max((r.shortfall for r in mine), default=0.0)
    if shortfall and 2 * shortfall + 0.02 > band:
        band = 2 * shortfall + 0.02
        reason += f", an OOM report {shortfall:.0%} above the prediction"
    return math.ceil(band * 1000) / 1000, reason
