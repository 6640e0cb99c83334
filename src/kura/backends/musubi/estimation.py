"""The bridge between run.yaml and Musubi's estimator.

``backend.config`` speaks Musubi (``fp8_base``, ``blocks_to_swap`` …); the estimator speaks
:class:`~kura.backends.musubi.estimator.config.EstimateConfig`. This module translates
both ways, in one place, so the fit ladder's choices land in run.yaml under the trainer's own
names, each with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kura.backends.base import DatasetMedia
from kura.backends.musubi.estimator.config import Attention, Fp8Mode, GcMode
from kura.errors import Unsupported
from kura.schema.dataset import DatasetSpec
from kura.schema.run import RunSpec

__all__ = [
    "LADDER_KEYS",
    "DatasetItems",
    "control_area_factor",
    "dataset_items",
    "epoch_buckets",
    "estimate_config",
    "estimator_model",
    "rung_change",
]

LADDER_KEYS = (
    "fp8_base",
    "fp8_scaled",
    "gradient_checkpointing",
    "gradient_checkpointing_cpu_offload",
    "batch_size",
    "gradient_accumulation_steps",
    "blocks_to_swap",
    "block_swap_h2d_only",
    "block_swap_ring_size",
    "use_pinned_memory_for_block_swap",
    "split_attn",
)
"""The backend.config keys the fit ladder may set (all speed or memory, never the recipe)."""

INSPECTION_BUCKET_STEP = 16
"""The bucket step ``kura dataset inspect`` uses (``inspect_dataset``'s default)."""

_ATTENTION: dict[str, Attention] = {
    "sdpa": "sdpa",
    "flash_attn": "flash",
    "flash": "flash",
    "xformers": "xformers",
    "sage_attn": "sage",
    "sage": "sage",
}


def estimator_model(bundle: Any) -> str:
    """The estimator's model id for a bundle (recorded in the bundle table)."""
    model = bundle.estimator_model
    if not model:
        raise Unsupported(
            f"bundle {bundle.id} has no estimator model in the bundle table",
            hint="estimate with `kura estimate --base` on a close bundle, or add it to the table",
        )
    return str(model)


@dataclass(frozen=True)
class DatasetItems:
    """One run dataset's items per epoch (repeats included) as the estimator's buckets, by
    the dataset entry Musubi reads them from: a folder with videos and images is two
    entries (``videos`` and ``images``)."""

    name: str
    videos: tuple[Any, ...]
    images: tuple[Any, ...]
    notes: tuple[str, ...]
    cached_videos: tuple[Any, ...] | None = None
    """The video items as latent caching encodes them, once each (no repeats), where they
    differ from the training items (FramePack: whole clips, trained as sections)."""


def dataset_items(
    use: Any, facts: Any, media: DatasetMedia | None, architecture: str
) -> DatasetItems:
    """Items per epoch of one run dataset, as Musubi's dataset code makes them
    (:mod:`kura.backends.musubi.items`), and what had to be assumed."""
    from kura.backends.musubi.estimator.config import Bucket

    width, height = (use.resolution * 2)[:2]
    videos = facts.counts.get("videos", 0) if facts else 0
    images = facts.counts.get("images", 0) if facts else 0
    notes: list[str] = []
    video_buckets: list[Any] = []
    if videos:
        inspected_at = tuple(facts.resolution) if facts else None
        found, cached, note = _video_buckets(
            use, media, videos, architecture, (width, height), inspected_at
        )
        video_buckets = [Bucket(w, h, f, n * use.repeats) for (w, h, f), n in found.items()]
        cached_videos = (
            None if cached is None else tuple(Bucket(w, h, f, n) for (w, h, f), n in cached.items())
        )
        notes += [note] if note else []
        if not images:
            return DatasetItems(use.name, tuple(video_buckets), (), tuple(notes), cached_videos)
    image_buckets: list[Any] = []
    if media is not None and media.image_sizes:
        found_images = _sized_buckets(media.image_sizes, (width, height), architecture)
        image_buckets = [Bucket(w, h, 1, n * use.repeats) for (w, h), n in found_images.items()]
    elif facts and list(facts.resolution) == [width, height] and facts.buckets:
        # Inspection buckets the images of a folder (beside its videos too) by aspect.
        found_images, note = _image_buckets(use.name, facts.buckets, (width, height), architecture)
        image_buckets = [Bucket(w, h, 1, n * use.repeats) for (w, h), n in found_images.items()]
        notes += [note] if note else []
    else:
        image_buckets = [Bucket(width, height, 1, max(1, images) * use.repeats)]
    return DatasetItems(
        use.name,
        tuple(video_buckets),
        tuple(image_buckets),
        tuple(notes),
        cached_videos if videos else None,
    )


def _buckets(
    spec: RunSpec,
    datasets: Mapping[str, DatasetSpec],
    media: Mapping[str, DatasetMedia],
    architecture: str,
) -> tuple[tuple[Any, ...], list[str]]:
    """Every dataset's items per epoch by size (:func:`dataset_items`), and what had to be
    assumed."""
    buckets: list[Any] = []
    notes: list[str] = []
    for use in spec.datasets:
        items = dataset_items(use, datasets[use.name].facts, media.get(use.name), architecture)
        buckets += [*items.videos, *items.images]
        notes += items.notes
    return tuple(buckets), notes


def epoch_buckets(
    spec: RunSpec,
    datasets: Mapping[str, DatasetSpec],
    media: Mapping[str, DatasetMedia],
    architecture: str,
) -> tuple[tuple[Any, ...], list[str]]:
    """The plan's items per epoch (estimator buckets: width, height, frames, count with
    repeats), dataset by dataset in run.yaml order, and what had to be assumed."""
    return _buckets(spec, datasets, media, architecture)


def _sized_buckets(
    sizes: tuple[tuple[int, int, int], ...], resolution: tuple[int, int], architecture: str
) -> dict[tuple[int, int], int]:
    """Images per bucket from each image's own size, with Musubi's rule at the run's
    resolution and the architecture's bucket step (``dataset/bucket.py`` BucketSelector:
    16, 32 for HiDream-O1); Kura writes ``enable_bucket = true`` and no upscale limit."""
    from collections import Counter

    from kura.backends.musubi.adapters import adapter_for
    from kura.dataset.buckets import BucketRule

    adapter = adapter_for(architecture)
    rule = BucketRule(resolution, adapter.resolution_multiple if adapter else 16)
    counts: Counter[tuple[int, int]] = Counter()
    for width, height, count in sizes:
        counts[rule.select((width, height))] += count
    return dict(sorted(counts.items()))


def _image_buckets(
    name: str, inspected: Any, resolution: tuple[int, int], architecture: str
) -> tuple[dict[tuple[int, int], int], str | None]:
    """Images per bucket at the architecture's bucket step. Inspection buckets at
    ``INSPECTION_BUCKET_STEP``; Musubi's ``BucketSelector`` uses 32 for HiDream-O1, so each
    inspected bucket is placed again at that step (by its own aspect, the image's being
    unknown here), said in the note."""
    from collections import Counter

    from kura.backends.musubi.adapters import adapter_for
    from kura.dataset.buckets import BucketRule

    adapter = adapter_for(architecture)
    step = adapter.resolution_multiple if adapter else INSPECTION_BUCKET_STEP
    counts: Counter[tuple[int, int]] = Counter()
    if step == INSPECTION_BUCKET_STEP:
        for b in inspected:
            counts[(b.width, b.height)] += b.count
        return dict(counts), None
    rule = BucketRule(resolution, step)
    for b in inspected:
        counts[rule.select((b.width, b.height))] += b.count
    return dict(sorted(counts.items())), (
        f"dataset {name}: buckets placed at {architecture}'s {step}-pixel step from the "
        f"inspection's {INSPECTION_BUCKET_STEP}-pixel buckets (an image near a bucket edge may "
        "land in the neighbouring one)"
    )


def _video_buckets(
    use: Any,
    media: DatasetMedia | None,
    videos: int,
    architecture: str,
    resolution: tuple[int, int],
    inspected_at: tuple[int, ...] | None = None,
) -> tuple[dict[tuple[int, int, int], int], dict[tuple[int, int, int], int] | None, str | None]:
    """Items per (bucket width, height, frame count) of one video dataset: exact from the
    clips' frames and buckets (Musubi batches never mix buckets or frame counts), else one
    item per target frame count per video at the dataset resolution (an assumption, said
    so). Clip buckets inspected at another resolution are placed again at this one by
    their aspect (said so)."""
    from kura.backends.musubi.adapters import adapter_for
    from kura.backends.musubi.items import (
        FRAMEPACK_WINDOW,
        MAX_FRAMES,
        VAE_FRAME_STRIDE,
        framepack_aligned_frames,
        framepack_sections,
        video_items,
    )
    from kura.dataset.buckets import BucketRule

    adapter = adapter_for(architecture)
    window = adapter.framepack_window if adapter else None
    default = adapter.defaults.get("frame_extraction") if adapter else None
    extraction = use.frame_extraction or (str(default.value) if default else "head")
    clips = media.clips if media else ()
    width, height = resolution
    if clips and all(c.frames is not None for c in clips):
        rates = {c.fps for c in clips}
        fps = next(iter(rates)) if len(rates) == 1 else None
        same = inspected_at == resolution
        rule = BucketRule(resolution, INSPECTION_BUCKET_STEP)
        by_bucket: dict[tuple[int, int], list[Any]] = {}
        placed = False
        for clip in clips:
            bucket = clip.bucket or resolution
            if clip.bucket is not None and not same:
                bucket, placed = rule.select(clip.bucket), True
            by_bucket.setdefault(bucket, []).append(clip)
        found: dict[tuple[int, int, int], int] = {}
        cached: dict[tuple[int, int, int], int] | None = None if window is None else {}
        for (w, h), group in sorted(by_bucket.items()):
            items = video_items(
                [(c.name, c.frames or 0) for c in group],
                extraction,
                use.frames,
                stride=use.frame_stride or 1,
                sample=use.frame_sample or 1,
                max_frames=use.max_frames,
                source_fps=fps,
                target_fps=None
                if adapter is None or adapter.model_fps is None
                else adapter.model_fps,
                framepack_window=window,
            )
            found.update({(w, h, f): n for f, n in items.per_frames.items()})
            if cached is not None and items.cached_frames is not None:
                cached.update({(w, h, f): n for f, n in items.cached_frames.items()})
        note = (
            f"dataset {use.name}: video buckets placed at {width}x{height} from an inspection "
            "at another resolution (re-inspect at the run's resolution for Musubi's own)"
            if placed
            else None
        )
        return found or {(width, height, 1): 0}, cached, note
    if window is not None:
        frames = (window - 1) * VAE_FRAME_STRIDE + 1
        # Latent caching encodes each clip whole: at most max_frames, section-aligned.
        longest = framepack_sections(use.max_frames or MAX_FRAMES, window)
        whole = framepack_aligned_frames(max(1, longest), window)
        return (
            {(width, height, frames): videos},
            {(width, height, whole): videos},
            (
                f"dataset {use.name}: video frame counts unknown; one FramePack section "
                f"({window or FRAMEPACK_WINDOW} latent frames) per video assumed, each "
                f"clip cached at max_frames ({whole} frames once aligned)"
            ),
        )
    targets = list(use.frames or [use.max_frames or 1])
    return (
        {(width, height, f): videos for f in targets},
        None,
        (
            f"dataset {use.name}: video frame counts unknown; one item per target frame count "
            "per video assumed (Musubi makes more under chunk/slide/uniform)"
        ),
    )


KURA_REASONS = ("fit ladder", "adapter default")
"""The reasons Kura writes for a ``backend.config`` value (``kura.runs.plan.KURA_REASONS``)."""


def person_set(spec: RunSpec, key: str) -> bool:
    """Whether a person set ``backend.config.KEY``: its reason is not one Kura writes, or its
    provenance is the person's instruction. The same rule as ``kura.runs.plan._person_set``,
    which keeps such a value whatever the ladder chose (a backend cannot import the runs
    layer; ``tests/backends/musubi/test_musubi_fit_fixed.py`` pins that the two agree)."""
    reason = spec.backend.reasons.get(key)
    if reason is not None and not str(reason).startswith(KURA_REASONS):
        return True
    return str(spec.provenance.get(f"backend.config.{key}", "")).startswith("your instruction")


def single_expert(spec: RunSpec, model_paths: Mapping[str, str] | None = None) -> bool:
    """Whether a dual-DiT run trains one expert alone, as compile decides it
    (:func:`kura.backends.musubi.rules.select_expert`): ``backend.config.dit_expert``, or
    exactly one of the ``dit`` / ``dit_high_noise`` roles among the resolved model paths."""
    if spec.backend.config.get("dit_expert"):
        return True
    if model_paths is None:
        return False
    return ("dit" in model_paths) != ("dit_high_noise" in model_paths)


def estimate_config(
    spec: RunSpec,
    datasets: Mapping[str, DatasetSpec],
    media: Mapping[str, DatasetMedia] | None = None,
    model_paths: Mapping[str, str] | None = None,
) -> Any:
    """The run exactly as written, as an estimator configuration (``model_paths``: the
    resolved compile inputs' roles, when the caller has them)."""
    from kura.backends.musubi.estimator.config import EstimateConfig
    from kura.backends.musubi.fit import steps_per_epoch
    from kura.models.bundles import get_bundle
    from kura.sizing.shapes import get_shape, with_depth

    config = spec.backend.config
    bundle = get_bundle(spec.model.base)
    model = estimator_model(bundle)
    shape = get_shape(model)
    if shape.one_expert is not None and single_expert(spec, model_paths):
        # One expert trained alone is Wan 2.1-style training of one DiT (docs/wan.md).
        model = shape.one_expert
        shape = get_shape(model)
    layers = config.get("num_layers")
    if isinstance(layers, int) and not isinstance(layers, bool):
        # Musubi builds the DiT with this many blocks (--num_layers): size that one.
        model = with_depth(model, layers)
        shape = get_shape(model)
    micro = int(config.get("batch_size", 1))
    accumulation = int(config.get("gradient_accumulation_steps", 1))
    buckets, _ = _buckets(spec, datasets, media or {}, bundle.architecture)
    epochs = spec.training.epochs or 1
    steps = spec.training.max_steps or epochs * steps_per_epoch(
        buckets, micro, accumulation, spec.execution.gpus
    )
    fp8: Fp8Mode = (
        "scaled" if config.get("fp8_scaled") else ("base" if config.get("fp8_base") else "none")
    )
    if "none" not in shape.fp8_modes:
        # A pre-quantised DiT (Ideogram 4) trains in its only format with no fp8 flag.
        fp8 = "scaled" if shape.fp8_modes[0] == "scaled" else "base"
    checkpointing: GcMode = "off"
    if config.get("gradient_checkpointing"):
        checkpointing = "cpu-offload" if config.get("gradient_checkpointing_cpu_offload") else "on"
    attention = str(config.get("attention", "sdpa"))
    if attention not in _ATTENTION:
        raise Unsupported(f"the estimator does not know attention {attention!r}")
    return EstimateConfig(
        model=model,
        buckets=buckets,
        micro_batch=micro,
        grad_accum=accumulation,
        precision="fp16" if config.get("mixed_precision") == "fp16" else "bf16",
        fp8=fp8,
        gradient_checkpointing=checkpointing,
        blocks_to_swap=int(config.get("blocks_to_swap", 0)),
        swap_h2d_only=bool(config.get("block_swap_h2d_only", False)),
        swap_ring_size=int(config.get("block_swap_ring_size") or 2),
        pinned_swap=bool(config.get("use_pinned_memory_for_block_swap", False)),
        rank=spec.training.network.rank,
        optimizer=spec.training.optimizer.lower(),
        attention=_ATTENTION[attention],
        split_attn=bool(config.get("split_attn", False)),
        offload_inactive_dit=shape.experts > 1 and bool(config.get("offload_inactive_dit")),
        gpu_count=spec.execution.gpus,
        total_steps=steps,
        reference_images=_reference_images(spec, bundle, media or {}),
    )


def _reference_images(spec: RunSpec, bundle: Any, media: Mapping[str, DatasetMedia]) -> int:
    """Control images per item that join the sequence (edit/control models): the most any
    dataset with controls has (inspection's count, else the variant's minimum); 0 for a
    model version that takes none."""
    from kura.backends.musubi.adapters import adapter_for

    adapter = adapter_for(bundle.architecture)
    if adapter is None:
        return 0
    version = next(
        (
            str(bundle.trainer[k])
            for k in ("model_version", "task", "model_type")
            if k in bundle.trainer
        ),
        None,
    )
    variant = adapter.variants.get(version)
    if variant is None or variant.controls is None:
        return 0
    least = max(1, variant.controls[0])
    counts = [
        (media[use.name].control_count or least) * control_area_factor(use, variant)
        for use in spec.datasets
        if use.name in media and media[use.name].control_count is not None
    ]
    if not counts and variant.controls[0] > 0:
        counts = [least * max(control_area_factor(use, variant) for use in spec.datasets)]
    return max(counts, default=0)


def control_area_factor(use: Any, variant: Any) -> int:
    """How many bucket-sized images one control costs. Musubi resizes a control to a bucket
    of ``control_resolution``'s area when the dataset entry has one (the variant's default is
    written unless ``no_resize_control``), and with ``no_resize_control`` shrinks only a
    control larger than it; the estimator costs a reference image at the target bucket's
    size, so a larger control resolution counts as that many images (rounded up)."""
    width, height = (use.resolution * 2)[:2]
    control = use.control_resolution
    if control is None and not use.no_resize_control and variant.control_resolution is not None:
        control = [int(variant.control_resolution.value)]
    if control is None:
        return 1
    c_width, c_height = (int(v) for v in (list(control) * 2)[:2])
    return max(1, math.ceil(c_width * c_height / (int(width) * int(height))))


def swap_limit(model: str, config: Mapping[str, Any]) -> int:
    """Musubi's block-swap limit for ``model`` at the depth ``num_layers`` sets, if any."""
    from kura.sizing.shapes import get_shape, with_depth

    layers = config.get("num_layers")
    if isinstance(layers, int) and not isinstance(layers, bool):
        model = with_depth(model, layers)
    return get_shape(model).swap_limit


def rung_change(rung: dict[str, Any], config: dict[str, Any]) -> dict[str, Any] | None:
    """The backend.config change that takes one out-of-memory rung, keeping the effective
    batch (a smaller micro-batch raises accumulation); None when the rung is not a config
    change (sampling off, a larger GPU)."""
    action, key = rung.get("action"), rung.get("key")
    if action == "enable" and key in LADDER_KEYS:
        change: dict[str, Any] = {key: True}
        if key in ("fp8_base", "fp8_scaled") or key.startswith("block"):
            change.setdefault("gradient_checkpointing", True)
        return change
    if action == "increase" and key == "blocks_to_swap":
        return {"blocks_to_swap": rung["to"], "gradient_checkpointing": True}
    if action == "decrease" and key == "batch_size":
        accumulation = int(config.get("gradient_accumulation_steps", 1))
        factor = int(rung["from"]) // int(rung["to"])
        return {"batch_size": rung["to"], "gradient_accumulation_steps": accumulation * factor}
    return None


def cache_items(
    spec: RunSpec,
    datasets: Mapping[str, DatasetSpec],
    media: Mapping[str, DatasetMedia],
    architecture: str,
) -> tuple[Any, ...]:
    """The items the caching scripts encode: every dataset's buckets once, without repeats
    (``cache_latents.py`` / ``cache_text_encoder_outputs.py`` encode each item once); a
    FramePack clip whole, section-aligned, as ``fpack_cache_latents.py:63-85`` encodes it
    in one VAE call (it trains as sections)."""
    from kura.backends.musubi.estimator.config import Bucket

    out: list[Any] = []
    for use in spec.datasets:
        items = dataset_items(use, datasets[use.name].facts, media.get(use.name), architecture)
        videos = (
            [Bucket(b.width, b.height, b.frames, b.count // use.repeats) for b in items.videos]
            if items.cached_videos is None
            else list(items.cached_videos)
        )
        out += videos + [
            Bucket(b.width, b.height, b.frames, b.count // use.repeats) for b in items.images
        ]
    return tuple(out)


def cache_captions(spec: RunSpec, datasets: Mapping[str, DatasetSpec]) -> int | None:
    """Captions the text-encoder caching script encodes: one per media file
    (``_default_retrieve_text_encoder_output_cache_batches`` reads each datasource item's
    caption once, however many clips a video makes); None when a dataset is not inspected."""
    total = 0
    for use in spec.datasets:
        facts = datasets[use.name].facts
        if facts is None:
            return None
        total += max(1, facts.counts.get("videos", 0) + facts.counts.get("images", 0))
    return total


def step_setup(
    spec: RunSpec,
    bundle: Any,
    datasets: Mapping[str, DatasetSpec] | None = None,
    media: Mapping[str, DatasetMedia] | None = None,
) -> Any:
    """What sizing the caching and sampling steps needs to know of this run (``datasets``
    None: the caching steps count items with their repeats)."""
    from kura.backends.musubi.adapters import adapter_for
    from kura.backends.musubi.config import ESCAPE_HATCH_KEYS
    from kura.backends.musubi.fit import StepSetup

    adapter = adapter_for(bundle.architecture)
    config = spec.backend.config
    if adapter is None:
        return StepSetup(custom=("cache_latents", "cache_text_encoder", "train", "sample"))
    version = next(
        (
            str(bundle.trainer[k])
            for k in ("model_version", "task", "model_type")
            if k in bundle.trainer
        ),
        None,
    )
    variant = adapter.variants.get(version)
    te = adapter.text_encoder_fp8
    te_key = (
        te.name
        if te is not None and te.kind == "bool" and (variant is None or variant.text_encoder_fp8)
        else None
    )
    vae_aids = any(key.name == "vae_chunk_size" for key in adapter.extra_config)
    custom_of = {
        "cache_latents_command": "cache_latents",
        "cache_text_encoder_command": "cache_text_encoder",
        "command": "train",
    }
    custom = tuple(custom_of[k] for k in ESCAPE_HATCH_KEYS if k in config and k in custom_of)
    if "train" in custom:
        custom += ("sample",)
    return StepSetup(
        te_fp8_key=te_key,
        vae_aids=vae_aids,
        sampling=bool(spec.training.sample_prompts),
        samples=sample_prompts(spec, bundle),
        sample_every_n_epochs=spec.training.sample_every_n_epochs,
        sample_at_first=spec.training.sample_at_first,
        epochs=spec.training.epochs,
        te_fp8=bool(te_key and config.get(te_key)),
        vae_chunked=bool(config.get("vae_chunk_size")),
        vae_tiled=bool(config.get("vae_tiling")),
        custom=custom,
        cache_items=()
        if datasets is None
        else cache_items(spec, datasets, media or {}, bundle.architecture),
        cache_captions=None if datasets is None else cache_captions(spec, datasets),
    )


FLUX2_DISTILLED = ("dev", "klein-4b", "klein-9b")
"""FLUX.2 versions Musubi samples without CFG: ``flux_2/flux2_utils.py`` FLUX2_MODEL_INFO
``guidance_distilled=True`` (the ``klein-base-*`` versions are not distilled)."""


def sample_prompts(spec: RunSpec, bundle: Any) -> tuple[Any, ...]:
    """The run's sample prompt lines as Musubi's sampler reads them (size, steps, CFG)."""
    from kura.backends.musubi.estimator.sampling import SAMPLERS, parse_prompt

    if bundle.architecture not in SAMPLERS:
        return ()
    native = bundle.native_resolutions[0] if bundle.native_resolutions else None
    distilled = str(bundle.trainer.get("model_version", "")) in FLUX2_DISTILLED
    return tuple(
        parse_prompt(line, bundle.architecture, native=native, distilled=distilled)
        for line in spec.training.sample_prompts
    )
