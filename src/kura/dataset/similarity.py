"""Content identity and the perceptual hashes that find likeness candidates.

Exact duplicates share a SHA-256 of their bytes. A likeness candidate (the same picture
resized, re-encoded, slightly cropped or mirrored) is found through pHash (imagehash's DCT
hash: a 32x32 grayscale thumbnail, the top-left 8x8 DCT coefficients, one bit per
coefficient saying whether it lies above their median). Each image keeps 32 of them:

* ``hash``: the whole picture;
* ``more``: the mirrored picture, then 30 crop windows (5 % and 10 % cut from one or both
  axes, at the start, centre or end), so that a crop of this picture matches one window.

A picture with almost no detail (its thumbnail's standard deviation below
``FLAT_DEVIATION``) gets no hash at all: its DCT coefficients are noise around zero and
would put every plain picture next to every other. The hashes only nominate candidates;
``kura.dataset.likeness`` confirms each pair on the pixels before reporting it.

Hashing a PNG needs a full decode (zlib inflation is most of its cost and has no reduced
mode), so :func:`hash_candidates` picks the PNGs whose shape allows them to be a resized,
re-encoded or mirrored copy of another image; only those are decoded.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from PIL import Image

    from kura.dataset.scan import Scan

__all__ = [
    "CROP_WINDOWS",
    "FLAT_DEVIATION",
    "exact_groups",
    "hash_candidates",
    "hash_decode_size",
    "likeness_hashes",
    "phash_batch",
    "sha256_hex",
]

FLAT_DEVIATION = 3.0
"""Grayscale standard deviation (0–255) below which a picture counts as flat and is not hashed."""

HASH_SIDE = 32
"""pHash's thumbnail side (imagehash: ``hash_size * highfreq_factor``)."""

BASE_SIDE = 96
"""Side of the square grayscale base the 32 thumbnails are cut from."""


def _crop_windows() -> tuple[tuple[float, float, float, float], ...]:
    """``(left, top, right, bottom)`` fractions of every crop window."""
    windows: list[tuple[float, float, float, float]] = []
    for cut in (0.05, 0.10):
        for where in (0.0, 0.5, 1.0):
            left, right = cut * where, 1.0 - cut * (1.0 - where)
            windows.append((left, 0.0, right, 1.0))
            windows.append((0.0, left, 1.0, right))
            for where_y in (0.0, 0.5, 1.0):
                top, bottom = cut * where_y, 1.0 - cut * (1.0 - where_y)
                windows.append((left, top, right, bottom))
    return tuple(windows)


CROP_WINDOWS = _crop_windows()
"""The crop windows whose hashes follow the mirrored hash in ``more`` (30 of them)."""


def hash_decode_size(width: int, height: int) -> tuple[int, int]:
    """The least size a JPEG is decoded at (``Image.draft``) for hashing: 1/8 scale, but
    never below twice the hash base, where DCT scaling would blur fine texture away."""
    return (
        min(width, max(width // 8, 2 * BASE_SIDE)),
        min(height, max(height // 8, 2 * BASE_SIDE)),
    )


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def phash_batch(thumbnails: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """pHash of each 32x32 grayscale thumbnail in an ``(n, 32, 32)`` array.

    The same arithmetic as ``imagehash.phash`` (a test holds them equal), done for all
    thumbnails in one call: imagehash's per-image call costs about 0.2 ms, which for 32
    hashes an image would cost more than reading a JPEG."""
    import numpy as np
    import scipy.fftpack

    pixels = thumbnails.astype(np.float64)
    dct = scipy.fftpack.dct(scipy.fftpack.dct(pixels, axis=1), axis=2)
    low = dct[:, :8, :8].reshape(len(pixels), 64)
    bits = low > np.median(low, axis=1, keepdims=True)
    return np.packbits(bits, axis=1).view(">u8").reshape(-1).astype(np.uint64)


def likeness_hashes(image: Image.Image) -> dict[str, Any]:
    """``{"hash": 16 hex digits, "more": 31 x 16 hex digits}``, or ``{"flat": True}``."""
    import imagehash
    import numpy as np
    from PIL import Image as PILImage

    base = _grayscale_base(image)
    whole = base.resize((HASH_SIDE, HASH_SIDE), PILImage.Resampling.BILINEAR)
    if float(np.asarray(whole, dtype=np.float64).std()) < FLAT_DEVIATION:
        return {"flat": True}
    side = float(BASE_SIDE)
    thumbnails = [np.asarray(whole)[:, ::-1]]
    for left, top, right, bottom in CROP_WINDOWS:
        box = (left * side, top * side, right * side, bottom * side)
        window = base.resize((HASH_SIDE, HASH_SIDE), PILImage.Resampling.BILINEAR, box=box)
        thumbnails.append(np.asarray(window))
    more = phash_batch(np.stack(thumbnails))
    return {
        "hash": str(imagehash.phash(whole)),
        "more": "".join(f"{int(value):016x}" for value in more),
    }


def _grayscale_base(image: Image.Image) -> Image.Image:
    from PIL import Image as PILImage

    if image.mode not in ("L", "RGB"):
        image = image.convert("RGB")
    small = image.resize((BASE_SIDE, BASE_SIDE), PILImage.Resampling.BOX)
    return small.convert("L")


def exact_groups(digests: Mapping[str, str]) -> list[list[str]]:
    """Groups (two or more) of keys whose content digests are equal, sorted."""
    by_digest: dict[str, list[str]] = defaultdict(list)
    for key, digest in digests.items():
        by_digest[digest].append(key)
    return sorted(sorted(keys) for keys in by_digest.values() if len(keys) > 1)


def hash_candidates(scan: Scan, facts: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Images read without hashes whose shape allows them to be a resized, re-encoded or
    mirrored copy of another image (or another to be theirs).

    Those keep the aspect ratio up to rounding, so each image stands for the interval of
    ratios within one pixel of its smaller side; an image is a candidate when its interval
    overlaps another's. Sorting the intervals by start finds every overlap in one sweep
    (``n log n``, whatever the sizes), where testing pairs of equal ratio was quadratic
    when all images share one size. Crops that change the aspect ratio are found only
    between hashed images (JPEGs, transparent PNGs and the PNGs chosen here)."""
    if all("likeness" in facts[entry.path] for entry in scan.images):
        return []  # only images lacking hashes are candidates (every one on a warm look)
    spans: list[tuple[float, float, str, bool]] = []
    for entry in scan.images:
        item = facts[entry.path]
        width, height = item.get("width"), item.get("height")
        if item.get("error") or not isinstance(width, int) or not isinstance(height, int):
            continue
        if width < 1 or height < 1:
            continue
        ratio, slack = width / height, 1.0 + 1.0 / min(width, height)
        spans.append((ratio / slack, ratio * slack, entry.path, "likeness" not in item))
    spans.sort()
    wanted: set[str] = set()
    reach = float("-inf")
    for index, (start, end, path, lacking) in enumerate(spans):
        overlaps_earlier = reach >= start
        overlaps_later = index + 1 < len(spans) and spans[index + 1][0] <= end
        if lacking and (overlaps_earlier or overlaps_later):
            wanted.add(path)
        reach = max(reach, end)
    return sorted(wanted)
