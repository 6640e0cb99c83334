"""Musubi Tuner's aspect-ratio buckets, reproduced so Kura can predict them before caching.

Source of the rule: ``src/musubi_tuner/dataset/bucket.py`` (``BucketSelector``) and
``src/musubi_tuner/dataset/media_utils.py`` (``divisible_by``, ``resize_image_to_bucket``) in
kohya-ss/musubi-tuner. The facts, restated:

* The bucket area is ``width * height`` of the dataset resolution.
* With ``enable_bucket`` off there is one bucket, the resolution itself (not rounded to the
  step), and ``bucket_no_upscale`` is ignored.
* With it on, ``s = int(sqrt(area))``; for every ``w`` from ``floor16(s // 2)`` up to ``s``
  in steps of the step size, ``h = floor16(area // w)`` and both ``(w, h)`` and ``(h, w)``
  are buckets (``floor16`` rounds down to a multiple of the step).
* An image goes to the bucket whose aspect ratio ``w / h`` is nearest its own; on a tie the
  bucket that sorts first by ``(w, h)`` wins. With ``bucket_no_upscale`` an image whose area
  is at most the bucket area keeps its own size, each side rounded down to the step.
* The image is scaled by ``max(bw / w, bh / h)`` (sides rounded half up) so it covers the
  bucket, then centre-cropped to it. Scales above 1 upscale (LANCZOS).
* Video datasets always build a bucketing selector with ``bucket_no_upscale`` off, whatever
  ``enable_bucket`` says, and pick the bucket from the first frame.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from functools import lru_cache

from kura.errors import InvalidInput

__all__ = ["BucketFit", "BucketRule", "bucket_resolutions", "fit_into_bucket"]


def floor_to(value: int, step: int) -> int:
    """``value`` rounded down to a multiple of ``step`` (Musubi's ``divisible_by``)."""
    return value - value % step


@lru_cache(maxsize=64)
def bucket_resolutions(resolution: tuple[int, int], step: int) -> tuple[tuple[int, int], ...]:
    """Every bucket ``(width, height)`` Musubi builds for ``resolution``, sorted."""
    area = resolution[0] * resolution[1]
    side = int(math.sqrt(area))
    buckets: set[tuple[int, int]] = set()
    for w in range(floor_to(side // 2, step), side + step, step):
        if w <= 0:
            continue
        h = floor_to(area // w, step)
        buckets.add((w, h))
        buckets.add((h, w))
    return tuple(sorted(b for b in buckets if b[0] > 0 and b[1] > 0))


@dataclass(frozen=True, slots=True)
class BucketFit:
    """How one picture lands in its bucket."""

    bucket: tuple[int, int]
    scale: float
    crop_fraction: float

    @property
    def upscaled(self) -> bool:
        return self.scale > 1.0

    @property
    def cropped(self) -> bool:
        return self.crop_fraction > 0.0


def fit_into_bucket(size: tuple[int, int], bucket: tuple[int, int]) -> BucketFit:
    """Scale to cover ``bucket``, then centre-crop: the fraction of the scaled picture lost."""
    width, height = size
    if (width, height) == bucket:
        return BucketFit(bucket=bucket, scale=1.0, crop_fraction=0.0)
    scale = max(bucket[0] / width, bucket[1] / height)
    scaled_w = int(width * scale + 0.5)
    scaled_h = int(height * scale + 0.5)
    if scaled_w * scaled_h == 0:
        return BucketFit(bucket=bucket, scale=scale, crop_fraction=1.0)
    kept = min(bucket[0], scaled_w) * min(bucket[1], scaled_h)
    lost = 1.0 - kept / (scaled_w * scaled_h)
    return BucketFit(bucket=bucket, scale=scale, crop_fraction=max(0.0, lost))


@dataclass(frozen=True, slots=True)
class BucketRule:
    """The bucket settings of one dataset; ``select`` maps a picture size to its bucket."""

    resolution: tuple[int, int]
    step: int = 16
    enable_bucket: bool = True
    no_upscale: bool = False

    def __post_init__(self) -> None:
        w, h = self.resolution
        if not (isinstance(w, int) and isinstance(h, int)) or w < 1 or h < 1:
            raise InvalidInput(
                f"resolution must be two positive whole numbers, got {self.resolution!r}",
                hint="Give the training resolution as (width, height), e.g. (1024, 1024).",
            )
        if not isinstance(self.step, int) or self.step < 1:
            raise InvalidInput(
                f"bucket step must be a positive whole number, got {self.step!r}",
                hint="Musubi uses 16 for most models and 32 for HiDream-O1.",
            )
        if self.enable_bucket and min(w, h) < 2 * self.step:
            raise InvalidInput(
                f"resolution {w}x{h} is too small for {self.step}-pixel buckets",
                hint="Use a resolution of at least a few bucket steps per side.",
            )

    @property
    def buckets(self) -> tuple[tuple[int, int], ...]:
        if not self.enable_bucket:
            return (self.resolution,)
        return bucket_resolutions(self.resolution, self.step)

    def select(self, size: tuple[int, int]) -> tuple[int, int]:
        """The bucket Musubi puts a picture of ``size`` (width, height) into."""
        return _select(self, size)

    def fit(self, size: tuple[int, int]) -> BucketFit:
        return _fit(self, size)


@lru_cache(maxsize=65536)
def _fit(rule: BucketRule, size: tuple[int, int]) -> BucketFit:
    return fit_into_bucket(size, _select(rule, size))


@lru_cache(maxsize=65536)
def _select(rule: BucketRule, size: tuple[int, int]) -> tuple[int, int]:
    if not rule.enable_bucket:
        return rule.resolution
    width, height = size
    if rule.no_upscale and width * height <= rule.resolution[0] * rule.resolution[1]:
        return floor_to(width, rule.step), floor_to(height, rule.step)
    ratio = width / height
    aspects, order = _by_aspect(rule)
    # The nearest aspect is one of the two neighbours of ``ratio`` in the sorted list; on a
    # tie the bucket listed first wins, as in Musubi's linear scan.
    at = bisect.bisect_left(aspects, ratio)
    best_error, best_index = math.inf, len(order)
    for i in (at - 1, at):
        if 0 <= i < len(aspects):
            error = abs(aspects[i] - ratio)
            if error < best_error or (error == best_error and order[i] < best_index):
                best_error, best_index = error, order[i]
    return rule.buckets[best_index]


@lru_cache(maxsize=256)
def _by_aspect(rule: BucketRule) -> tuple[list[float], list[int]]:
    """The rule's bucket aspects sorted ascending, with each one's index in ``buckets``."""
    ranked = sorted((b[0] / b[1], index) for index, b in enumerate(rule.buckets))
    return [aspect for aspect, _ in ranked], [index for _, index in ranked]
