"""A dataset's media as the stored inspection read it (videos, images, controls), for the
backend's planner and compiler: trainers count items per epoch from these facts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kura.backends.base import DatasetMedia
    from kura.workspace import Workspace

__all__ = ["dataset_media"]


def dataset_media(workspace: Workspace, name: str) -> DatasetMedia:
    """The videos (frames, fps, bucket), the image count and the controls per item of
    dataset ``name``; empty when it has no stored inspection (a damaged one is an error)."""
    from kura.backends.base import ClipFact, DatasetMedia
    from kura.dataset.registry import INSPECTION_NAME, load_inspection

    if not (workspace.dataset_dir(name) / INSPECTION_NAME).is_file():
        return DatasetMedia()
    report = load_inspection(workspace, name)
    clips = tuple(
        ClipFact(
            name=str(row.get("path")),
            frames=_int(row.get("frames")),
            fps=_float(row.get("fps")),
            bucket=_bucket(row.get("bucket")),
        )
        for row in report.videos
        if not row.get("error")
    )
    controls = (report.pairs or {}).get("control_counts") or {}
    return DatasetMedia(
        clips=clips,
        images=report.counts.get("images", 0),
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
