"""A dataset's media as the stored inspection read it (videos, images, controls), for the
backend's planner and compiler: trainers count items per epoch from these facts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kura.backends.base import DatasetMedia
    from kura.schema.dataset import DatasetSpec
    from kura.schema.inspection import InspectionFile
    from kura.schema.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["at_run_resolution", "image_sizes", "media_of"]


def media_of(report: InspectionFile | None) -> DatasetMedia:
    """The media a stored inspection report names; empty without one."""
    from kura.backends.base import DatasetMedia

    if report is None:
        return DatasetMedia()
    return _media(report.videos, report.counts, report.pairs)


def at_run_resolution(
    workspace: Workspace,
    spec: RunSpec,
    datasets: Mapping[str, DatasetSpec],
    media: Mapping[str, DatasetMedia],
) -> tuple[dict[str, DatasetSpec], dict[str, DatasetMedia]]:
    """Each run dataset's facts and media as inspection reports them at the resolution the
    run trains it at: a trainer buckets every image and clip by its own size at that
    resolution, so buckets inspected at another one say nothing of the run's batches.
    A dataset inspected at the run's resolution is taken as stored; another is inspected
    again there (from the stat cache; nothing is written). Either way the media carry every
    image's own size (``DatasetMedia.image_sizes``) for the trainer's own bucket step."""
    from kura.dataset.inspect import inspect_dataset
    from kura.dataset.registry import control_dir, facts_from_report, media_dir
    from kura.dataset.statcache import StatCache

    out_datasets, out_media = dict(datasets), dict(media)
    for use in spec.datasets:
        stored = datasets[use.name]
        width, height = (list(use.resolution) * 2)[:2]
        if stored.facts is None:
            continue
        if list(stored.facts.resolution) == [width, height]:
            sizes = _image_sizes(workspace, stored)
            out_media[use.name] = replace(media[use.name], image_sizes=sizes)
            continue
        with StatCache.open() as cache:
            report = inspect_dataset(
                media_dir(workspace, stored),
                caption_ext=stored.caption_ext,
                control_dir=control_dir(workspace, stored),
                resolution=(width, height),
                cache=cache,
            ).to_dict()
        out_datasets[use.name] = stored.model_copy(update={"facts": facts_from_report(report)})
        out_media[use.name] = replace(
            _media(report["videos"], report["counts"], report["pairs"]),
            image_sizes=_image_sizes(workspace, stored),
        )
    return out_datasets, out_media


def _image_sizes(workspace: Workspace, dataset: DatasetSpec) -> tuple[tuple[int, int, int], ...]:
    from kura.dataset.registry import control_dir, media_dir

    return image_sizes(
        media_dir(workspace, dataset), dataset.caption_ext, control_dir(workspace, dataset)
    )


def image_sizes(
    folder: Path, caption_ext: str, control: Path | None = None
) -> tuple[tuple[int, int, int], ...]:
    """``(width, height, count)`` of the readable images of a dataset folder as inspection
    reads them (the same scan and per-file facts, from the stat cache): a trainer buckets
    each image by its own size with its own bucket step, which inspection's 16-pixel
    buckets cannot give (HiDream-O1 buckets at 32). Computed once per
    :func:`kura.dataset.onelook.one_look` (a plan asks for them up to five times)."""
    from kura.dataset.onelook import current_look

    look = current_look()
    if look is None:
        return _read_image_sizes(folder, caption_ext, control)
    key = ("image_sizes", Path(folder), caption_ext, control)
    return look.once(key, lambda: _read_image_sizes(folder, caption_ext, control))


def _read_image_sizes(
    folder: Path, caption_ext: str, control: Path | None
) -> tuple[tuple[int, int, int], ...]:
    from collections import Counter

    from kura.dataset.facts import gather_facts
    from kura.dataset.scan import scan_dataset
    from kura.dataset.statcache import StatCache

    scan = scan_dataset(folder, caption_ext, skip=control)
    with StatCache.open() as cache:
        facts = gather_facts([(e.path, "image") for e in scan.images], cache=cache, progress=None)
    sizes = Counter(
        (f["width"], f["height"])
        for f in facts.values()
        if not f.get("error")
        and isinstance(f.get("width"), int)
        and isinstance(f.get("height"), int)
    )
    return tuple((w, h, n) for (w, h), n in sorted(sizes.items()))


def _media(videos: Any, counts: Mapping[str, int], pairs: Any) -> DatasetMedia:
    from kura.backends.base import ClipFact, DatasetMedia

    clips = tuple(
        ClipFact(
            name=str(row.get("path")),
            frames=_int(row.get("frames")),
            fps=_float(row.get("fps")),
            bucket=_bucket(row.get("bucket")),
        )
        for row in videos
        if not row.get("error")
    )
    controls = (pairs or {}).get("control_counts") or {}
    return DatasetMedia(
        clips=clips,
        images=counts.get("images", 0),
        control_count=int(next(iter(controls))) if len(controls) == 1 else None,
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _bucket(value: Any) -> tuple[int, int] | None:
    if isinstance(value, list) and len(value) == 2 and all(_int(v) for v in value):
        return int(value[0]), int(value[1])
    return None
