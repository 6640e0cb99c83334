"""The dataset TOML Musubi reads (``--dataset_config``), built with ``tomli_w``.

One ``[[datasets]]`` entry per run dataset, each with its own ``cache_directory`` under
``<run_dir>/cache/<family>/`` where the family is the architecture plus the model version
(Musubi shares a cache suffix between e.g. the Qwen-Image-Edit variants, so a per-version
folder keeps one variant's caches from being reused by another).

Mixing resolutions: a dataset may appear only once in a run. Listing the same folder
twice at two resolutions would train the same pool twice per epoch (and Musubi needs a
distinct cache folder for each), so Kura refuses it; register disjoint subsets as
separate datasets instead, or use one resolution with bucketing.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

import tomli_w

from kura.backends.musubi.adapter_model import Adapter, Variant
from kura.backends.musubi.contract import CompileInputs, DatasetInput
from kura.backends.musubi.items import VideoItems, framepack_min_frames, video_items
from kura.errors import SpecError, Unsupported
from kura.schema.run import DatasetUse, RunSpec

__all__ = [
    "PlannedDataset",
    "cache_family",
    "nearest_valid_frames",
    "plan_datasets",
    "render_dataset_toml",
]

_VIDEO_ONLY_KEYS = ("frames", "frame_extraction", "frame_stride", "frame_sample", "max_frames")


@dataclass(frozen=True)
class PlannedDataset:
    """A run dataset matched to its resolved input, with its cache folder."""

    use: DatasetUse
    source: DatasetInput
    cache_directory: str
    frame_extraction: str | None
    control_resolution: int | None = None
    """The variant's default control resolution (square), used when the dataset sets none."""


def cache_family(architecture: str, model_version: str | None) -> str:
    """The cache sub-folder for this architecture and model version."""
    if model_version is None:
        return _slug(architecture)
    return f"{_slug(architecture)}-{_slug(model_version)}"


def _slug(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")
    return cleaned[:48] or "x"


def nearest_valid_frames(count: int) -> tuple[int, int]:
    """The 4n+1 frame counts just below and just above ``count``."""
    below = max(1, ((count - 1) // 4) * 4 + 1)
    above = below + 4 if below < count else below
    return below, above


def _check_frames(use: DatasetUse, extraction: str) -> None:
    frames = use.frames
    if extraction == "full":
        if frames is not None:
            raise SpecError(
                f"dataset {use.name!r}: frame_extraction `full` takes whole videos and ignores "
                "frames",
                hint="drop frames and set max_frames (the cap on frames per video)",
            )
        if use.max_frames is None:
            raise SpecError(
                f"dataset {use.name!r}: frame_extraction `full` needs max_frames",
                hint="set max_frames, e.g. 145 (long videos cost VRAM at latent caching)",
            )
        return
    if not frames:
        raise SpecError(
            f"video dataset {use.name!r} needs datasets[].frames (target frame counts, 4n+1)",
            hint="set e.g. frames: [1, 25, 45] under this dataset in run.yaml",
        )
    for count in frames:
        if count < 1 or (count - 1) % 4 != 0:
            below, above = nearest_valid_frames(max(count, 1))
            raise SpecError(
                f"dataset {use.name!r}: frame count {count} is not 4n+1",
                hint=f"use {below} or {above}",
            )
    if extraction == "chunk" and 1 in frames:
        raise SpecError(
            f"dataset {use.name!r}: frame_extraction `chunk` must not include 1 in frames",
            hint="drop 1 from frames, or use frame_extraction `head`",
        )


def _check_kind(adapter: Adapter, use: DatasetUse, source: DatasetInput) -> None:
    if source.kind == "video" and not adapter.accepts_video:
        raise SpecError(
            f"dataset {use.name!r} is video, but {adapter.id} trains on images only",
            hint="use an image dataset, or a video architecture (wan, hunyuan_video, …)",
        )
    if source.kind == "image" and not adapter.accepts_image:
        raise Unsupported(
            f"dataset {use.name!r} is images, but Kura's {adapter.id} adapter trains on video only",
            hint="use a video dataset; Kura does not support image modes such as FramePack "
            "one-frame training (its fp_1f_* dataset keys)",
        )
    if source.kind == "image":
        set_keys = [k for k in _VIDEO_ONLY_KEYS if getattr(use, k) is not None]
        if set_keys:
            raise SpecError(
                f"dataset {use.name!r} is images but sets video key(s): {', '.join(set_keys)}",
                hint="drop them from this dataset in run.yaml",
            )
    multiple = adapter.resolution_multiple
    if multiple > 16 and any(side % multiple for side in use.resolution):
        raise SpecError(
            f"dataset {use.name!r}: {adapter.id} needs width and height divisible by {multiple}",
            hint=f"use e.g. resolution [{_round_to(use.resolution[0], multiple)}, "
            f"{_round_to(use.resolution[-1], multiple)}]",
        )


def _round_to(value: int, multiple: int) -> int:
    return max(multiple, round(value / multiple) * multiple)


def _check_controls(
    adapter: Adapter, variant: Variant, use: DatasetUse, source: DatasetInput
) -> list[str]:
    has_control = source.control_dir is not None
    if not has_control and (use.control_resolution is not None or use.no_resize_control):
        raise SpecError(
            f"dataset {use.name!r} sets control options but has no control folder",
            hint="register the control folder with the dataset, or drop the control options",
        )
    rule = variant.controls
    if rule is None:
        if has_control:
            raise SpecError(
                f"dataset {use.name!r} has control images, but {adapter.id} "
                "(this model version) does not train on them",
                hint="use a paired-edit architecture (flux_kontext, qwen_image edit, flux2) "
                "or a dataset without controls",
            )
        return []
    low, high = rule
    if low > 0 and not has_control:
        raise SpecError(
            f"dataset {use.name!r} has no control images, but {adapter.id} needs "
            f"{'exactly one' if high == 1 else f'at least {low}'} per item",
            hint="register the dataset's control folder (dataset.yaml `control`)",
        )
    if not has_control:
        return []
    warnings: list[str] = []
    if use.no_resize_control and use.control_resolution is None:
        warnings.append(
            f"dataset {use.name!r}: no_resize_control without control_resolution: Musubi keeps "
            "each control image at its own size (rounded down to the bucket step), and the "
            "plan costs a control at the target's bucket size; a larger control costs more "
            "memory than planned (set control_resolution to cap it)"
        )
    count = source.control_count
    if count is None:
        return [
            *warnings,
            f"dataset {use.name!r}: control images per item unknown; Musubi checks the count "
            "when it caches latents",
        ]
    if count < max(low, 1) or (high is not None and count > high):
        wanted = "exactly one" if high == 1 else f"{max(low, 1)} to {high or 'any number'}"
        raise SpecError(
            f"dataset {use.name!r} has {count} control images per item; {adapter.id} needs "
            f"{wanted}",
            hint="keep one control per item (name_0 only)"
            if high == 1
            else "adjust the control folder",
        )
    return warnings


def plan_datasets(
    spec: RunSpec, inputs: CompileInputs, adapter: Adapter | None, variant: Variant | None
) -> tuple[list[PlannedDataset], list[str]]:
    """Match run datasets to inputs, check them, and give each a cache folder.

    Without an adapter (escape hatch for an architecture Kura has no record of) only the
    architecture-independent checks run, and video datasets must name their
    ``frame_extraction``.
    """
    by_name: dict[str, DatasetInput] = {}
    for source in inputs.datasets:
        if source.name in by_name:
            raise SpecError(
                f"dataset {source.name!r} was resolved twice", hint="pass each dataset once"
            )
        by_name[source.name] = source
    seen_names: set[str] = set()
    seen_dirs: dict[str, str] = {}
    warnings: list[str] = []
    planned: list[PlannedDataset] = []
    family = posixpath.join(
        inputs.run_dir, "cache", cache_family(inputs.architecture, inputs.model_version)
    )
    for index, use in enumerate(spec.datasets):
        if use.name in seen_names:
            raise SpecError(
                f"dataset {use.name!r} is listed twice in run.yaml",
                hint="a pool may be used once; for several resolutions register disjoint "
                "subsets as separate datasets, or use one resolution with bucketing",
            )
        seen_names.add(use.name)
        found = by_name.get(use.name)
        if found is None:
            raise SpecError(
                f"dataset {use.name!r} from run.yaml was not resolved",
                hint="register the dataset in the workspace (`kura dataset add`)",
            )
        source = found
        if source.media_dir in seen_dirs:
            raise SpecError(
                f"datasets {seen_dirs[source.media_dir]!r} and {use.name!r} share the folder "
                f"{source.media_dir!r}",
                hint="the same pool must not be trained twice; split it into disjoint folders",
            )
        seen_dirs[source.media_dir] = use.name
        extraction = None
        if adapter is not None and variant is not None:
            _check_kind(adapter, use, source)
            warnings.extend(_check_controls(adapter, variant, use, source))
        if source.kind == "video":
            extraction = use.frame_extraction or _default_extraction(adapter, use)
            _check_frames(use, extraction)
            if adapter is not None:
                warnings.extend(_check_fps(adapter, use, source))
                _check_framepack(adapter, use, source, extraction)
                warnings.extend(_check_items(adapter, use, source, extraction))
                _check_mixed(adapter, use, source)
        cache_dir = posixpath.join(family, f"{index:02d}-{_slug(use.name)}")
        control_default = (
            variant.control_resolution
            if variant is not None and source.control_dir is not None
            else None
        )
        planned.append(
            PlannedDataset(
                use,
                source,
                cache_dir,
                extraction,
                None if control_default is None else int(control_default.value),
            )
        )
    unused = sorted(set(by_name) - seen_names)
    if unused:
        raise SpecError(
            f"resolved dataset(s) not in run.yaml: {', '.join(unused)}",
            hint="list them under datasets: in run.yaml, or do not pass them",
        )
    return planned, warnings


def _check_fps(adapter: Adapter, use: DatasetUse, source: DatasetInput) -> list[str]:
    """One frame rate per dataset (Musubi's ``source_fps`` is per dataset); Musubi drops
    frames down to the model's rate but never adds any."""
    rates = sorted({clip.fps for clip in source.clips if clip.fps is not None})
    if len(rates) > 1:
        by_rate = {rate: [c.name for c in source.clips if c.fps == rate][:3] for rate in rates}
        listed = "; ".join(f"{rate:g} fps: {', '.join(names)}" for rate, names in by_rate.items())
        raise SpecError(
            f"dataset {use.name!r} mixes frame rates ({listed}); Musubi converts one "
            "source_fps per dataset, so the others would train at the wrong speed",
            hint="split the videos into one dataset per frame rate, or re-encode them to one",
        )
    fps = source.source_fps
    if adapter.model_fps is None or fps is None:
        if adapter.model_fps is not None and source.clips:
            return [
                f"dataset {use.name!r}: frame rate unknown; {adapter.id} trains at "
                f"{adapter.model_fps} fps and Musubi converts only with source_fps"
            ]
        return []
    if fps < adapter.model_fps:
        return [
            f"dataset {use.name!r} is {fps:g} fps, below {adapter.id}'s {adapter.model_fps} fps: "
            "Musubi drops frames to the model's rate but never adds any, so motion trains "
            f"{adapter.model_fps / fps:.2f}x slow"
        ]
    return []


def _check_framepack(
    adapter: Adapter, use: DatasetUse, source: DatasetInput, extraction: str
) -> None:
    """FramePack caches each item in sections of its latent window: an item shorter than
    one section fails at latent caching."""
    window = adapter.framepack_window
    if window is None:
        return
    least = framepack_min_frames(window)
    short = [f for f in use.frames or () if f < least]
    if short:
        raise SpecError(
            f"dataset {use.name!r}: FramePack needs at least {least} frames per item (latent "
            f"window {window}); frames {short} would fail at latent caching",
            hint=f"use frames of at least {least} (e.g. [{least}, {least + 4 * window}])",
        )
    if extraction == "full" and use.max_frames is not None and use.max_frames < least:
        raise SpecError(
            f"dataset {use.name!r}: FramePack needs at least {least} frames per item; "
            f"max_frames {use.max_frames} would fail at latent caching",
            hint=f"set max_frames to {least} or more",
        )
    items = _clip_items(adapter, use, source, extraction)
    if items is not None and items.no_section:
        names = ", ".join(items.no_section[:5])
        more = len(items.no_section) - 5
        raise SpecError(
            f"dataset {use.name!r}: video(s) {names}{f' and {more} more' if more > 0 else ''} "
            f"are shorter than FramePack's {least} frames (after the fps conversion) and "
            "would fail at latent caching",
            hint="drop or lengthen them, or use frame_extraction head with frames that fit",
        )


def _check_items(
    adapter: Adapter, use: DatasetUse, source: DatasetInput, extraction: str
) -> list[str]:
    """Videos that give Musubi no item are skipped silently (``VideoDataset`` keeps only the
    targets a clip reaches, ``dataset/image_video_dataset.py:742-768``): a warning naming
    them, and a refusal when the dataset gives no training item at all (nothing to train,
    yet a plan would say it fits)."""
    items = _clip_items(adapter, use, source, extraction)
    if items is None or not items.too_short:
        return []
    rate = (
        f" at {adapter.model_fps} fps (Musubi drops frames from {source.source_fps:g} fps)"
        if adapter.model_fps is not None and source.source_fps is not None
        else ""
    )
    wanted = (
        f"max_frames {use.max_frames}"
        if extraction == "full"
        else f"the target frame count(s) {', '.join(str(f) for f in use.frames or ())}"
    )
    names = ", ".join(items.too_short[:5]) + (
        f" and {len(items.too_short) - 5} more" if len(items.too_short) > 5 else ""
    )
    if items.count == 0 and source.images == 0:
        longest = max((c.frames or 0 for c in source.clips), default=0)
        raise SpecError(
            f"dataset {use.name!r} gives {adapter.id} no training item: every video "
            f"({names}) is shorter{rate} than {wanted} ({extraction} extraction; the longest "
            f"has {longest} frames before any fps conversion)",
            hint="set datasets[].frames to counts the clips reach (4n+1), or use longer clips",
        )
    return [
        f"dataset {use.name!r}: video(s) {names} give no item (shorter{rate} than {wanted}); "
        "Musubi skips them"
    ]


def _clip_items(
    adapter: Adapter, use: DatasetUse, source: DatasetInput, extraction: str
) -> VideoItems | None:
    """The dataset's items as Musubi makes them, None when a video's frames are unknown."""
    if not source.clips or any(c.frames is None for c in source.clips):
        return None
    return video_items(
        [(c.name, c.frames or 0) for c in source.clips],
        extraction,
        use.frames,
        stride=use.frame_stride or 1,
        sample=use.frame_sample or 1,
        max_frames=use.max_frames,
        source_fps=source.source_fps,
        target_fps=None if adapter.model_fps is None else float(adapter.model_fps),
        framepack_window=adapter.framepack_window,
    )


def _check_mixed(adapter: Adapter, use: DatasetUse, source: DatasetInput) -> None:
    """A folder with videos and images is written as two dataset entries (Musubi reads a
    ``video_directory`` for videos only); refused where one kind cannot train."""
    if source.images <= 0:
        return
    if not adapter.accepts_image:
        raise SpecError(
            f"dataset {use.name!r} holds {source.images} image(s) beside its videos, but "
            f"Kura's {adapter.id} adapter trains on video only: the images would not train",
            hint="move the images to their own dataset folder, or drop them",
        )
    if source.control_dir is not None:
        raise SpecError(
            f"dataset {use.name!r} mixes images and videos and has controls; Kura cannot pair "
            "the controls of two kinds in one folder",
            hint="split the images and videos into two datasets",
        )


def _default_extraction(adapter: Adapter | None, use: DatasetUse) -> str:
    if adapter is None or "frame_extraction" not in adapter.defaults:
        raise SpecError(
            f"video dataset {use.name!r} needs datasets[].frame_extraction here",
            hint="set frame_extraction (head, chunk, slide, uniform or full)",
        )
    return str(adapter.defaults["frame_extraction"].value)


def _resolution(values: list[int]) -> list[int]:
    return [values[0], values[0]] if len(values) == 1 else [values[0], values[1]]


def _image_entry(item: PlannedDataset) -> dict[str, Any]:
    """The images of a folder that also holds videos, as their own image dataset entry."""
    use, source = item.use, item.source
    return {
        "image_directory": source.media_dir,
        "caption_extension": source.caption_ext,
        "cache_directory": f"{item.cache_directory}-images",
        "resolution": _resolution(use.resolution),
        "num_repeats": use.repeats,
        "enable_bucket": True,
    }


def _dataset_entry(item: PlannedDataset) -> dict[str, Any]:
    use, source = item.use, item.source
    entry: dict[str, Any] = {}
    if source.kind == "video":
        entry["video_directory"] = source.media_dir
    else:
        entry["image_directory"] = source.media_dir
    entry["caption_extension"] = source.caption_ext
    entry["cache_directory"] = item.cache_directory
    entry["resolution"] = _resolution(use.resolution)
    entry["num_repeats"] = use.repeats
    # Videos too: Musubi buckets a video by its aspect at latent caching whatever this says,
    # but at training ``VideoDataset.prepare_for_training`` buckets by it, and without it
    # puts every aspect in the one resolution bucket, so a batch of two would stack latents
    # of two shapes (found by tests/backends/musubi/test_musubi_semantics.py).
    entry["enable_bucket"] = True
    if source.control_dir is not None:
        entry["control_directory"] = source.control_dir
        if use.no_resize_control is not None:
            entry["no_resize_control"] = use.no_resize_control
        if use.control_resolution is not None:
            entry["control_resolution"] = _resolution(use.control_resolution)
        elif item.control_resolution is not None and not use.no_resize_control:
            entry["control_resolution"] = [item.control_resolution] * 2
    if source.kind == "video":
        if use.frames is not None:
            entry["target_frames"] = list(use.frames)
        entry["frame_extraction"] = item.frame_extraction
        for key in ("frame_stride", "frame_sample", "max_frames"):
            value = getattr(use, key)
            if value is not None:
                entry[key] = value
        if source.source_fps is not None:
            entry["source_fps"] = float(source.source_fps)
    return entry


def render_dataset_toml(planned: list[PlannedDataset], batch_size: int) -> str:
    """The dataset TOML text; ``batch_size`` is the micro-batch."""
    document = {
        "general": {"batch_size": batch_size},
        "datasets": [
            entry
            for item in planned
            for entry in (
                [_dataset_entry(item), _image_entry(item)]
                if item.source.kind == "video" and item.source.images > 0
                else [_dataset_entry(item)]
            )
        ],
    }
    return tomli_w.dumps(document)
