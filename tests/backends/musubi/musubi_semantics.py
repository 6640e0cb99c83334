"""The media of every golden case, written to disk, and what Kura's plan says of it.

Each golden case (``musubi_cases.CASES``) names its datasets (``photos``, ``pairs``,
``clips``) but no files. ``media_for`` gives them files with real sizes, frame counts and frame
rates (the rate is the case's ``DatasetInput.source_fps``); ``materialise`` writes them (PNG
images, MPEG-4 clips through PyAV, one caption per item, control images named as Musubi
pairs them). ``kura_semantics`` then runs Kura's own path on that folder: inspection (as
``kura dataset inspect`` does, at the run's resolution), the media facts a compile
and the plan receive (every image's own size too, as ``kura.runs.media`` reads them), the
compile itself (whose dataset TOML must be the golden one), and the plan's items per epoch
(:func:`kura.backends.musubi.estimation.dataset_items`), steps per epoch and control cost.
``musubi_semantics`` turns the harness's report of Musubi's own dataset code into the same
summary, so the two compare key by key (``encoded``: what latent caching hands the VAE,
one call per item: a FramePack clip whole, issue 23 item 5).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from musubi_cases import Case

from kura.backends.base import ClipFact, DatasetInput, DatasetMedia
from kura.backends.musubi import compile_run
from kura.backends.musubi.adapters import adapter_for
from kura.backends.musubi.estimation import (
    control_area_factor,
    dataset_items,
    epoch_buckets,
)
from kura.backends.musubi.fit import steps_per_epoch
from kura.backends.musubi.items import video_items
from kura.dataset.inspect import inspect_dataset
from kura.dataset.registry import facts_from_report
from kura.runs.media import image_sizes
from kura.schema.dataset import DatasetSpec

__all__ = [
    "GOLDEN_TOML_ROOTS",
    "TOO_SHORT_FOR_FRAMEPACK",
    "kura_semantics",
    "materialise",
    "media_for",
    "musubi_semantics",
    "steps_from_argv",
]

GOLDEN_TOML_ROOTS = ("/data/", "/kura/runs/r1/")
"""The two path prefixes of the golden TOMLs (media and run folder), rewritten to a local
folder for Musubi."""


@dataclass(frozen=True)
class Clip:
    name: str
    frames: int
    size: tuple[int, int]


@dataclass(frozen=True)
class Picture:
    name: str
    size: tuple[int, int]
    controls: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Media:
    pictures: tuple[Picture, ...] = ()
    clips: tuple[Clip, ...] = ()


_PHOTOS = Media(
    pictures=(
        Picture("p01", (1024, 1024)),
        Picture("p02", (1024, 1024)),
        Picture("p03", (1200, 800)),
        Picture("p04", (800, 1200)),
        Picture("p05", (1536, 1024)),
        Picture("p06", (640, 480)),
        Picture("p07", (1000, 1500)),
    )
)
_PAIRS_1 = Media(
    pictures=(
        Picture("e01", (1024, 1024), ((1024, 1024),)),
        Picture("e02", (1200, 800), ((1400, 1000),)),
        Picture("e03", (832, 1216), ((900, 1300),)),
        Picture("e04", (1024, 1024), ((2048, 2048),)),
    )
)
_PAIRS_2 = Media(
    pictures=(
        Picture("e01", (1024, 1024), ((1024, 1024), (768, 768))),
        Picture("e02", (1200, 800), ((1400, 1000), (1024, 1024))),
        Picture("e03", (832, 1216), ((900, 1300), (1024, 768))),
    )
)
_CLIPS = Media(
    clips=(
        Clip("c01", 20, (960, 544)),
        Clip("c02", 50, (960, 544)),
        Clip("c03", 100, (960, 544)),
        Clip("c04", 61, (544, 960)),
    )
)
_FRAMEPACK_CLIPS = Media(
    clips=(
        Clip("c01", 50, (960, 544)),
        Clip("c02", 160, (640, 640)),
        Clip("c03", 100, (544, 960)),
    )
)


def media_for(case: Case, source: DatasetInput) -> Media:
    """The files of one dataset of a case."""
    if source.kind == "video" and source.images:
        return Media(pictures=_PHOTOS.pictures, clips=_CLIPS.clips)
    if source.kind == "video":
        return _FRAMEPACK_CLIPS if case.architecture == "framepack" else _CLIPS
    if source.control_dir is None:
        return _PHOTOS
    return _PAIRS_2 if source.control_count == 2 else _PAIRS_1


TOO_SHORT_FOR_FRAMEPACK = Media(clips=(*_FRAMEPACK_CLIPS.clips, Clip("c09", 30, (960, 544))))
"""FramePack media with one clip shorter than a section (37 frames at window 9)."""


def _sources(case: Case) -> tuple[DatasetInput, ...]:
    _, inputs = case.build()
    return tuple(inputs.datasets)


def _local(path: str, root: Path) -> Path:
    return root / path.lstrip("/")


def _write_picture(path: Path, size: tuple[int, int], seed: int) -> None:
    from PIL import Image

    colour = ((seed * 53) % 256, (seed * 97) % 256, (seed * 29) % 256)
    Image.new("RGB", size, colour).save(path)


def _write_clip(path: Path, clip: Clip, fps: float) -> None:
    import av
    import numpy as np

    width, height = clip.size
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(clip.frames):
            pixels = np.full((height, width, 3), (index * 7) % 256, dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())


def materialise(case: Case, root: Path, override: Media | None = None) -> None:
    """Write every dataset folder of ``case`` under ``root`` (at the golden paths);
    ``override`` replaces the files of a single-dataset case."""
    sources = _sources(case)
    assert override is None or len(sources) == 1
    for number, source in enumerate(sources):
        media = override or media_for(case, source)
        folder = _local(source.media_dir, root)
        folder.mkdir(parents=True, exist_ok=True)
        control = _local(source.control_dir, root) if source.control_dir else None
        if control is not None:
            control.mkdir(parents=True, exist_ok=True)
        for index, picture in enumerate(media.pictures):
            _write_picture(folder / f"{picture.name}.png", picture.size, number * 31 + index)
            (folder / f"{picture.name}.txt").write_text(f"a photo {picture.name}\n")
            assert control is not None or not picture.controls
            for c_index, c_size in enumerate(picture.controls):
                stem = picture.name if len(picture.controls) == 1 else f"{picture.name}_{c_index}"
                assert control is not None
                _write_picture(control / f"{stem}.png", c_size, 7 + index + c_index)
        for clip in media.clips:
            assert source.source_fps is not None
            _write_clip(folder / f"{clip.name}.mp4", clip, source.source_fps)
            (folder / f"{clip.name}.txt").write_text(f"a clip {clip.name}\n")


def _media_from_report(report: dict[str, Any]) -> DatasetMedia:
    """The compile's media facts from an inspection, as ``kura.runs.media`` reads them."""
    clips = tuple(
        ClipFact(
            name=str(row["path"]),
            frames=row.get("frames"),
            fps=None if row.get("fps") is None else float(row["fps"]),
            bucket=None if row.get("bucket") is None else (row["bucket"][0], row["bucket"][1]),
        )
        for row in report["videos"]
        if not row.get("error")
    )
    controls = (report.get("pairs") or {}).get("control_counts") or {}
    return DatasetMedia(
        clips=clips,
        images=report["counts"].get("images", 0),
        control_count=int(next(iter(controls))) if len(controls) == 1 else None,
    )


def _argv_value(argv: list[str], flag: str, default: int) -> int:
    return int(argv[argv.index(flag) + 1]) if flag in argv else default


def steps_from_argv(batches: int, train_argv: list[str]) -> int:
    """Optimizer steps per epoch as Musubi's trainer counts them
    (``training/trainer_base.py``: ``ceil(len(train_dataloader) / num_processes /
    gradient_accumulation_steps)``), from the golden train step's argv."""
    processes = _argv_value(train_argv, "--num_processes", 1)
    accumulation = _argv_value(train_argv, "--gradient_accumulation_steps", 1)
    return math.ceil(batches / processes / accumulation)


def kura_semantics(case: Case, root: Path, golden_toml: str) -> dict[str, Any]:
    """What Kura's inspection, compile and plan say of the materialised case."""
    spec, inputs = case.build()
    adapter = adapter_for(case.architecture)
    assert adapter is not None
    datasets: dict[str, DatasetSpec] = {}
    media: dict[str, DatasetMedia] = {}
    resolved: list[DatasetInput] = []
    for use, source in zip(spec.datasets, inputs.datasets, strict=True):
        control = _local(source.control_dir, root) if source.control_dir else None
        report = inspect_dataset(
            _local(source.media_dir, root),
            caption_ext=source.caption_ext,
            control_dir=control,
            resolution=((use.resolution * 2)[0], (use.resolution * 2)[1]),
        ).to_dict()
        facts = facts_from_report(report)
        datasets[use.name] = DatasetSpec(name=use.name, media=str(source.media_dir), facts=facts)
        found = replace(
            _media_from_report(report),
            image_sizes=image_sizes(_local(source.media_dir, root), source.caption_ext, control),
        )
        media[use.name] = found
        rates = {clip.fps for clip in found.clips}
        resolved.append(
            replace(
                source,
                control_count=found.control_count if source.control_dir else None,
                source_fps=next(iter(rates)) if len(rates) == 1 else None,
                clips=found.clips,
                images=found.images,
            )
        )
    compiled = compile_run(spec, replace(inputs, datasets=tuple(resolved)))
    toml_text = compiled.files["dataset.toml"]
    train = next(step for step in compiled.steps if step.kind == "train")
    buckets, notes = epoch_buckets(spec, datasets, media, case.architecture)
    micro = int(spec.backend.config.get("batch_size", 1))
    accumulation = int(spec.backend.config.get("gradient_accumulation_steps", 1))
    entries: list[dict[str, Any]] = []
    for use, source in zip(spec.datasets, resolved, strict=True):
        found = media[use.name]
        items = dataset_items(use, datasets[use.name].facts, found, case.architecture)
        groups = [("image", items.images)]
        if source.kind == "video":
            groups = [("video", items.videos)] + ([("image", items.images)] if found.images else [])
        for kind, buckets_of in groups:
            mine = [b for b in buckets_of if b.count]
            entry: dict[str, Any] = {
                "kind": kind,
                "items": sum(b.count for b in mine) // use.repeats,
                "train_items": sum(b.count for b in mine),
                "batches": sum(math.ceil(b.count / micro) for b in mine),
                "controls": [found.control_count or 0],
            }
            if found.control_count:
                variant = adapter.variants[case.version]
                entry["control_load"] = found.control_count * control_area_factor(use, variant)
            cached = items.cached_videos if kind == "video" else None
            encodes = (
                list(cached)
                if cached is not None
                else [replace(b, count=b.count // use.repeats) for b in mine]
            )
            entry["encoded"] = sorted(
                [f"{b.width}x{b.height}x{b.frames}", b.count] for b in encodes if b.count
            )
            if kind == "image":
                entry["buckets"] = sorted([f"{b.width}x{b.height}", b.count] for b in mine)
            elif adapter.framepack_window is None:
                entry["frames"] = _video_frames(adapter, use, source)
                entry["buckets"] = sorted(
                    [f"{b.width}x{b.height}x{b.frames}", b.count] for b in mine
                )
            else:
                entry["buckets"] = _merged_sizes([((b.width, b.height), b.count) for b in mine])
            entries.append(entry)
    batches = sum(e["batches"] for e in entries)
    return {
        "toml_is_golden": toml_text == golden_toml,
        "warnings": list(compiled.warnings),
        "notes": notes,
        "datasets": entries,
        "batches_per_epoch": batches,
        "steps_per_epoch": steps_per_epoch(buckets, micro, accumulation, spec.execution.gpus),
        "steps_per_epoch_by_argv": steps_from_argv(batches, list(train.argv)),
    }


def _video_frames(adapter: Any, use: Any, source: DatasetInput) -> dict[str, int]:
    extraction = use.frame_extraction or str(adapter.defaults["frame_extraction"].value)
    items = video_items(
        [(c.name, c.frames or 0) for c in source.clips],
        extraction,
        use.frames,
        stride=use.frame_stride or 1,
        sample=use.frame_sample or 1,
        max_frames=use.max_frames,
        source_fps=source.source_fps,
        target_fps=None if adapter.model_fps is None else float(adapter.model_fps),
    )
    return {str(frames): count for frames, count in items.per_frames.items()}


def musubi_semantics(report: dict[str, Any], train_argv: list[str]) -> dict[str, Any]:
    """The harness's report of one case as the same summary ``kura_semantics`` gives."""
    entries: list[dict[str, Any]] = []
    framepack = report["architecture"] == "fp"
    for dataset in report["datasets"]:
        items = dataset["items"]
        entry: dict[str, Any] = {
            "kind": dataset["kind"],
            "items": dataset["train_items"] // dataset["num_repeats"],
            "train_items": dataset["train_items"],
            "batches": dataset["batches"],
            "controls": sorted({i["controls"] for i in items}),
        }
        loads = [
            sum(h * w for h, w in i["control_sizes"]) / (i["bucket"][0] * i["bucket"][1])
            for i in items
            if i["control_sizes"]
        ]
        if loads:
            entry["control_load"] = round(max(loads), 3)
        if dataset["kind"] == "image":
            entry["buckets"] = sorted(
                [f"{key[0]}x{key[1]}", count] for key, count in _merged(dataset["buckets"])
            )
        elif not framepack:
            entry["frames"] = {
                str(f): n for f, n in sorted(Counter(i["frames"] for i in items).items())
            }
            entry["buckets"] = sorted(
                ["x".join(key[:3]), count] for key, count in dataset["buckets"]
            )
        else:
            entry["buckets"] = _merged_sizes(
                [((int(key[0]), int(key[1])), count) for key, count in dataset["buckets"]]
            )
        entry["encoded"] = sorted(
            ["x".join(str(v) for v in size), count]
            for size, count in Counter(tuple(e) for e in dataset["encoded"]).items()
        )
        if dataset["cache_errors"]:
            entry["cache_errors"] = dataset["cache_errors"]
        entries.append(entry)
    batches = sum(e["batches"] for e in entries)
    return {
        "architecture": report["architecture"],
        "datasets": entries,
        "batches_per_epoch": batches,
        "steps_per_epoch": steps_from_argv(batches, train_argv),
    }


def _merged(buckets: list[list[Any]]) -> list[tuple[tuple[str, str], int]]:
    counts: Counter[tuple[str, str]] = Counter()
    for key, count in buckets:
        counts[(key[0], key[1])] += count
    return sorted(counts.items())


def _merged_sizes(buckets: list[tuple[tuple[int, int], int]]) -> list[list[Any]]:
    counts: Counter[tuple[int, int]] = Counter()
    for size, count in buckets:
        counts[size] += count
    return sorted([f"{w}x{h}", n] for (w, h), n in counts.items())
