"""Items per epoch as Musubi 0.3.4's own dataset code makes them.

Read from ``dataset/image_video_dataset.py`` (``VideoDataset.__init__`` and
``retrieve_latent_cache_batches``), ``dataset/media_utils.py`` (``load_video``'s frame
dropping when ``source_fps`` is set) and ``fpack_cache_latents.py`` (FramePack's sections):

- ``target_frames`` are rounded down to 4n+1, de-duplicated and sorted;
- ``uniform`` with ``frame_sample`` 1 becomes ``head``; ``head`` reads only the first
  ``max(target_frames)`` frames (after the fps conversion);
- with ``source_fps`` set, frames are dropped to the architecture's rate (never added): a
  source frame is kept when ``int(i * target / source)`` differs from the last kept one;
- per video: ``head`` one item per target that fits; ``chunk`` every whole chunk of each
  target; ``slide`` every ``frame_stride`` offset of each target; ``uniform``
  ``frame_sample`` offsets of each target that fits; ``full`` one item of
  ``min(frames, max_frames)`` rounded down to 4n+1 (``max_frames`` 129 when unset,
  ``dataset/config_utils.py:71``);
- FramePack caches each item as ``floor((latent_frames - 1) / window)`` sections, each a
  training item of ``window`` latent frames (plus clean context); fewer than one section
  fails at latent caching ("Not enough frames for FramePack"). The VAE encodes the whole
  section-aligned item in one call before it is split.

Each item is then repeated ``num_repeats`` times per epoch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "FRAMEPACK_WINDOW",
    "MAX_FRAMES",
    "VAE_FRAME_STRIDE",
    "VideoItems",
    "extracted_frames",
    "fps_frame_count",
    "framepack_aligned_frames",
    "framepack_min_frames",
    "framepack_sections",
    "rounded_targets",
    "video_items",
]

VAE_FRAME_STRIDE = 4
"""``VideoDataset.vae_frame_stride``: every architecture wants 4n+1 frames."""
MAX_FRAMES = 129
"""``max_frames`` when a dataset sets none (``dataset/config_utils.py:71``)."""
FRAMEPACK_WINDOW = 9
"""``fp_latent_window_size`` default in ``dataset/config_utils.py``."""


def rounded_targets(targets: Sequence[int]) -> tuple[int, ...]:
    """``target_frames`` as ``VideoDataset`` keeps them: 4n+1, unique, sorted."""
    return tuple(sorted({(f - 1) // VAE_FRAME_STRIDE * VAE_FRAME_STRIDE + 1 for f in targets}))


def fps_frame_count(
    frames: int, source_fps: float | None, target_fps: float | None, end: int | None
) -> int:
    """Frames ``load_video`` returns for a video of ``frames`` frames (``end`` is the head
    limit, exclusive), dropping frames from ``source_fps`` to ``target_fps`` as it does."""
    if source_fps is None or target_fps is None:
        return frames if end is None else min(frames, end)
    delta = target_fps / source_fps
    kept = 0
    fraction = 0.0
    previous = -1
    for _ in range(frames):
        index = int(fraction)
        fraction += delta
        if index == previous:
            continue
        previous = index
        if end is not None and index >= end:
            break
        kept += 1
    return kept


def extracted_frames(
    frame_count: int,
    extraction: str,
    targets: Sequence[int],
    *,
    stride: int = 1,
    sample: int = 1,
    max_frames: int | None = None,
) -> list[int]:
    """The frame count of every item one video of ``frame_count`` (loaded) frames gives."""
    if extraction == "head":
        return [t for t in targets if frame_count >= t]
    if extraction == "chunk":
        return [t for t in targets for i in range(0, frame_count, t) if i + t <= frame_count]
    if extraction == "slide":
        return [
            t for t in targets if frame_count >= t for _ in range(0, frame_count - t + 1, stride)
        ]
    if extraction == "uniform":
        return [t for t in targets if frame_count >= t for _ in range(sample)]
    if extraction == "full":
        frames = min(frame_count, MAX_FRAMES if max_frames is None else max_frames)
        return [(frames - 1) // VAE_FRAME_STRIDE * VAE_FRAME_STRIDE + 1]
    raise ValueError(f"frame_extraction {extraction} is not supported")


def framepack_sections(frames: int, window: int = FRAMEPACK_WINDOW) -> int:
    """FramePack sections (training items) one cached item of ``frames`` frames gives."""
    latent = (frames - 1) // VAE_FRAME_STRIDE + 1
    return (latent - 1) // window


def framepack_aligned_frames(sections: int, window: int = FRAMEPACK_WINDOW) -> int:
    """The frames FramePack's latent caching keeps of an item of ``sections`` sections and
    encodes in one VAE call: ``latent_f_aligned = sections * window + 1``, ``frame_count_
    aligned = (latent_f_aligned - 1) * 4 + 1`` (``fpack_cache_latents.py:72-85``)."""
    return sections * window * VAE_FRAME_STRIDE + 1


def framepack_min_frames(window: int = FRAMEPACK_WINDOW) -> int:
    """The fewest frames an item needs for one FramePack section (37 at window 9)."""
    return window * VAE_FRAME_STRIDE + 1


@dataclass(frozen=True)
class VideoItems:
    """The items one video dataset gives per epoch (before repeats), by frame count.

    ``per_frames`` maps an item's frame count (for FramePack: the section window as
    frames) to how many items have it; ``too_short`` names the videos that give no item
    (Musubi skips them silently); ``no_section`` the FramePack videos with an item too short
    for one section (latent caching fails on them)."""

    per_frames: dict[int, int]
    too_short: tuple[str, ...]
    no_section: tuple[str, ...] = ()
    cached_frames: dict[int, int] | None = None
    """Frame count → items as latent caching encodes them, one VAE call each (None: the
    items themselves). FramePack encodes the whole section-aligned clip at once
    (``fpack_cache_latents.py:63-85``), then splits it into sections."""

    @property
    def count(self) -> int:
        return sum(self.per_frames.values())


def video_items(
    clips: Sequence[tuple[str, int]],
    extraction: str,
    targets: Sequence[int] | None,
    *,
    stride: int = 1,
    sample: int = 1,
    max_frames: int | None = None,
    source_fps: float | None = None,
    target_fps: float | None = None,
    framepack_window: int | None = None,
) -> VideoItems:
    """Items per epoch for videos ``(name, frames)`` as Musubi's ``VideoDataset`` makes
    them (FramePack's sections when ``framepack_window`` is given)."""
    kept = rounded_targets(targets) if targets else ()
    if extraction == "uniform" and sample == 1:
        extraction = "head"
    end = max(kept) if extraction == "head" and kept else None
    counts: Counter[int] = Counter()
    cached: Counter[int] = Counter()
    short: list[str] = []
    fatal: list[str] = []
    for name, frames in clips:
        loaded = fps_frame_count(frames, source_fps, target_fps, end)
        items = extracted_frames(
            loaded, extraction, kept, stride=stride, sample=sample, max_frames=max_frames
        )
        if framepack_window is not None:
            window_frames = (framepack_window - 1) * VAE_FRAME_STRIDE + 1
            sections = [framepack_sections(f, framepack_window) for f in items]
            if not items:
                short.append(name)
            if any(s < 1 for s in sections):
                fatal.append(name)
            for s in sections:
                if s >= 1:
                    counts[window_frames] += s
                    cached[framepack_aligned_frames(s, framepack_window)] += 1
            continue
        if not items:
            short.append(name)
        counts.update(items)
    return VideoItems(
        dict(sorted(counts.items())),
        tuple(short),
        tuple(fatal),
        dict(sorted(cached.items())) if framepack_window is not None else None,
    )
