"""Per-video facts with PyAV: frame count, frame rate, duration, frame size, integrity.

Frames are counted by demuxing packets (no decoding, one packet per frame for the codecs
people train on) unless the container states the count; the first frame is decoded to prove
the stream is readable. Musubi trains ``target_frames`` clips that must be 4n+1 frames long
(``src/musubi_tuner/dataset/image_video_dataset.py``, ``VideoDataset``), so a video of
4n+1 frames can be used whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kura.dataset.reading import MAX_VIDEO_BYTES, NotReadable, open_regular, stream_digest

__all__ = ["frames_suit_targets", "read_video_facts", "usable_frames"]


def frames_suit_targets(frames: int) -> bool:
    """Whether a clip of ``frames`` frames has the 4n+1 length Musubi's video models need."""
    return frames >= 1 and frames % 4 == 1


def usable_frames(frames: int) -> int:
    """The longest 4n+1 clip that fits in ``frames`` frames (0 if none)."""
    return 0 if frames < 1 else frames - (frames - 1) % 4


def read_video_facts(path: Path) -> dict[str, Any]:
    """Frames, fps, duration and size of one video; an ``error`` entry when unreadable."""
    facts: dict[str, Any] = {"kind": "video"}
    try:
        with open_regular(path, limit=MAX_VIDEO_BYTES, what="video") as (handle, _):
            facts["bytes"], facts["sha256"] = stream_digest(handle, MAX_VIDEO_BYTES)
    except NotReadable as exc:
        return {**facts, "bytes": 0, "sha256": None, "error": str(exc)}
    except OSError as exc:
        return {**facts, "bytes": 0, "sha256": None, "error": f"cannot read: {exc}"}
    if facts["bytes"] == 0:
        facts["error"] = "empty"
        return facts
    try:
        facts.update(_stream_facts(Path(path)))
    except Exception as exc:  # PyAV/FFmpeg raise many types for bad data; each is a broken file.
        facts["error"] = f"{type(exc).__name__}: {exc}"
    return facts


def _stream_facts(path: Path) -> dict[str, Any]:
    import av

    with av.open(str(path)) as container:
        if not container.streams.video:
            raise ValueError("no video stream")
        stream = container.streams.video[0]
        first = next(container.decode(stream), None)
        if first is None:
            raise ValueError("the video stream holds no decodable frame")
        width, height = first.width, first.height
        rate = stream.average_rate or stream.guessed_rate
        fps = float(rate) if rate else None
    frames = _count_frames(path)
    duration = frames / fps if fps else None
    return {
        "frames": frames,
        "fps": round(fps, 3) if fps else None,
        "duration": round(duration, 3) if duration is not None else None,
        "width": width,
        "height": height,
    }


def _count_frames(path: Path) -> int:
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return sum(1 for packet in container.demux(stream) if packet.size)
