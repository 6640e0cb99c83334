"""The AI-Toolkit estimate of one run on one GPU class: every step's peak, band, verdict
and time, and the document the plan shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kura.backends.aitoolkit.archs import AitkModel
from kura.backends.aitoolkit.estimator.calibration import MIN_BAND, band_fraction
from kura.backends.aitoolkit.estimator.components import SHAPE_FOR_BUNDLE, components_for
from kura.backends.aitoolkit.estimator.memory import (
    StepMemory,
    dit_bf16_gib,
    host_ram_gib,
    step_memories,
)
from kura.backends.aitoolkit.estimator.setup import AitkSetup, Bucket
from kura.backends.aitoolkit.estimator.steptime import (
    CACHE_TIME_BAND,
    TIME_BAND,
    cache_latents_seconds,
    cache_text_seconds,
    image_sample_seconds,
    load_seconds,
    train_step_time,
)
from kura.backends.aitoolkit.knobs import Knobs
from kura.backends.base import DatasetInput, StepCost
from kura.sizing.shapes import get_shape

if TYPE_CHECKING:
    from kura.planning.gpus import GpuClass
    from kura.schema.run import RunSpec

__all__ = ["AitkEstimate", "estimate_setup", "setup_for", "sizeable"]

SOURCE = "kura AI-Toolkit estimator (shapes + AI-Toolkit 27a03a9 semantics)"


def sizeable(model: AitkModel) -> str | None:
    """None when Kura can size ``model``'s runs, else why not."""
    if model.bundle not in SHAPE_FOR_BUNDLE:
        return (
            f"Kura has no DiT shape for {model.arch} ({model.bundle}): its steps are not "
            "sized; approving the plan needs --accept-risk"
        )
    return None


def _bucket(spec: RunSpec, index: int) -> Bucket:
    use = spec.datasets[index]
    side = max(use.resolution)
    frames = use.frames[0] if use.frames else 1
    return Bucket(side, side, frames)


def _dataset_buckets(
    spec: RunSpec, model: AitkModel, knobs: Knobs, index: int, source: DatasetInput | None
) -> tuple[Bucket, ...]:
    """The sizes one dataset trains at: AI-Toolkit's own buckets where inspection read
    every item's size (it never raises an image's area, so 512 px pictures train at 512
    px in a 1024 px run, ``toolkit/buckets.py:17``); else the square of the run's side,
    the largest area AI-Toolkit gives any bucket (an upper bound)."""
    from kura.backends.aitoolkit.buckets import bucket_resolution, input_buckets, sizes_read

    if source is None or not sizes_read(source):
        return (_bucket(spec, index),)
    use = spec.datasets[index]
    found = input_buckets(
        source, bucket_resolution(use), arch=model.arch, batch_size=knobs.batch_size, repeats=1
    )
    return tuple(Bucket(b.width, b.height, b.frames) for b in found.buckets)


def setup_for(
    spec: RunSpec,
    model: AitkModel,
    knobs: Knobs,
    datasets: Sequence[DatasetInput] | None = None,
) -> AitkSetup:
    """The estimator's view of a run: each dataset's buckets (:func:`_dataset_buckets`;
    ``datasets`` are the compile inputs, None before they are known)."""
    sources: Sequence[DatasetInput | None] = datasets or [None] * len(spec.datasets)
    buckets = tuple(
        dict.fromkeys(
            bucket
            for index, source in enumerate(sources)
            for bucket in _dataset_buckets(spec, model, knobs, index, source)
        )
    )
    sampling = bool(spec.training.sample_prompts)
    return AitkSetup(
        shape=get_shape(SHAPE_FOR_BUNDLE[model.bundle]),
        arch=model.arch,
        knobs=knobs,
        rank=spec.training.network.rank,
        optimizer=spec.training.optimizer,
        buckets=buckets,
        control=model.control,
        two_experts=model.two_experts and knobs.train_high_noise and knobs.train_low_noise,
        sample=_bucket(spec, 0) if sampling else None,
        sample_first=sampling and spec.training.sample_at_first,
    )


@dataclass(frozen=True)
class AitkEstimate:
    memories: tuple[StepMemory, ...]
    band: float
    band_reason: str
    step_seconds: float | None
    total_steps: int | None
    costs: tuple[StepCost, ...]
    host_ram_gib: float


def _fits(peak: float, band: float, gpu: GpuClass | None) -> tuple[float, bool | None]:
    upper = peak * (1 + band / 2)
    return upper, None if gpu is None else upper <= gpu.usable_gib


def _sample_events(setup: AitkSetup, total_steps: int | None, every: int | None) -> int | None:
    if setup.sample is None:
        return 0
    if total_steps is None:
        return None
    events = total_steps // every if every else 1
    return events + (1 if setup.sample_first else 0)


def estimate_setup(
    setup: AitkSetup,
    gpu: GpuClass | None,
    *,
    accumulation: int,
    total_steps: int | None,
    sample_every: int | None,
    prompts: int,
    items: int | None = None,
) -> AitkEstimate:
    memories = step_memories(setup)
    band, reason = band_fraction(setup.shape.architecture)
    ram = host_ram_gib(setup)
    per_bucket = (
        {b: train_step_time(setup, b, gpu, accumulation).step_s for b in setup.buckets}
        if gpu is not None
        else {}
    )
    step_s = max(per_bucket.values()) if per_bucket else None
    costs: list[StepCost] = []
    for memory in memories:
        # Loading and caching hold weights whose sizes are known: the narrowest band.
        step_band = band if memory.kind in ("train", "sample") else min(band, MIN_BAND)
        upper, fits = _fits(memory.peak_gib, step_band, gpu)
        seconds = _seconds(memory, setup, gpu, step_s, total_steps, sample_every, prompts)
        band_s = TIME_BAND
        if memory.kind in ("prepare", "cache"):
            seconds, band_s = _setup_seconds(memory, setup, gpu, items), CACHE_TIME_BAND
        costs.append(
            StepCost(
                step=memory.step,
                kind=memory.kind,  # type: ignore[arg-type]
                peak_gib=round(memory.peak_gib, 2),
                upper_gib=round(upper, 2),
                host_ram_gib=round(ram, 1),
                seconds=seconds,
                fits=fits,
                source=SOURCE,
                notes=memory.notes,
                seconds_band=band_s if seconds is not None else None,
            )
        )
    return AitkEstimate(memories, band, reason, step_s, total_steps, tuple(costs), ram)


def _setup_seconds(
    memory: StepMemory, setup: AitkSetup, gpu: GpuClass | None, items: int | None
) -> float | None:
    """Loading from disk; caching every item once (repeats reuse the cache). None when the
    datasets' item counts are unknown (``kura dataset inspect`` counts them)."""
    parts = components_for(setup.arch)
    if memory.step == "load":
        dit = dit_bf16_gib(setup) * 2**30 * (2 if setup.two_experts else 1)
        return round(load_seconds(dit, parts.text_encoder_params_b * 2e9), 1)
    if gpu is None or items is None:
        return None
    if memory.step == "cache-latents":
        largest = max(setup.buckets, key=lambda b: b.width * b.height * b.frames)
        return round(cache_latents_seconds(items, largest, gpu, parts.video_vae), 1)
    return round(cache_text_seconds(items, parts.text_encoder_params_b, gpu), 1)


def _seconds(
    memory: StepMemory,
    setup: AitkSetup,
    gpu: GpuClass | None,
    step_s: float | None,
    total_steps: int | None,
    sample_every: int | None,
    prompts: int,
) -> float | None:
    """Seconds of a step: training is steps x the slowest bucket's step (AI-Toolkit mixes
    buckets; the slowest is the plan's conservative reading), sampling its events x prompts
    x one image; loading and caching are left to past runs (None: unknown)."""
    if gpu is None:
        return None
    if memory.kind == "train":
        if total_steps is None or step_s is None:
            return None
        return round(total_steps * step_s / len(setup.buckets), 1)
    if memory.kind == "sample" and setup.sample is not None:
        events = _sample_events(setup, total_steps, sample_every)
        if memory.step == "sample-baseline":
            events = 1
        elif events is not None and setup.sample_first:
            events -= 1
        if events is None:
            return None
        return round(events * prompts * image_sample_seconds(setup, setup.sample, gpu), 1)
    return None
