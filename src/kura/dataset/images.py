"""Fast per-image facts: format, size, colour mode, EXIF orientation, integrity, likeness.

Only regular files up to ``MAX_IMAGE_BYTES`` are read (:mod:`kura.dataset.reading`), the
hash is streamed, and an image over Pillow's ``MAX_IMAGE_PIXELS`` is a finding, not a
decode. Before decoding, the header's size is checked against the bytes the file holds
(:mod:`kura.dataset.payload`): a decoder fills a scan that ends early with grey and says
nothing. Integrity is then checked by decoding, but cheaply: a JPEG is decoded at 1/8 scale through
libjpeg's DCT scaling (``Image.draft``), which still reads every entropy-coded byte and so
notices truncation; other formats are decoded in full (a PNG decode inflates every IDAT
chunk and stops at a missing end). The small decode also feeds the perceptual hashes
(``similarity.likeness_hashes``).

A PNG without transparency is not decoded at all: walking its chunks and checking every
CRC (``Image.verify``) finds truncation and flipped bytes in well under a millisecond, where
inflating a 2-megapixel PNG takes tens of milliseconds. Its perceptual hashes are left out
(no ``likeness`` entry) and filled in by :func:`read_pixel_facts` only when the inspection
needs them (another picture has the same aspect ratio, so it could be a copy).

What Musubi does with each colour mode (``src/musubi_tuner/dataset/datasources.py``,
``ImageDirectoryDatasource.get_image_data``, and ``cache_latents.py``): any mode other than
RGB/RGBA goes through ``Image.convert("RGB")``; RGBA keeps its alpha until latent caching
drops it (``content[..., :3]``), except for FramePack one-frame training where alpha is a
mask. Musubi never calls ``ImageOps.exif_transpose``, so EXIF orientation is ignored and the
stored pixels are trained as they lie.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from kura.dataset.payload import missing_data
from kura.dataset.reading import MAX_IMAGE_BYTES, NotReadable, open_regular, stream_digest
from kura.dataset.similarity import hash_decode_size, likeness_hashes

__all__ = ["color_mode_issue", "read_image_facts", "read_pixel_facts"]

ORIENTATION_TAG = 0x0112
ALPHA_MODES = frozenset({"RGBA", "LA", "PA", "RGBa", "La"})
HIGH_BIT_MODES = frozenset({"I;16", "I;16B", "I;16L", "I;16N", "I", "F"})


def read_image_facts(path: Path) -> dict[str, Any]:
    """Everything an inspection needs from one image file, as a JSON-able dict.

    A file that cannot be read or decoded gets an ``error`` entry instead of raising: a
    special file or one over ``MAX_IMAGE_BYTES`` is not read at all, the hash is streamed,
    and pixels are decoded from the file, never from a copy in memory."""
    try:
        with open_regular(path, limit=MAX_IMAGE_BYTES, what="image") as (handle, _):
            size, digest = stream_digest(handle, MAX_IMAGE_BYTES)
            facts: dict[str, Any] = {"kind": "image", "bytes": size, "sha256": digest}
            if not size:
                facts["error"] = "empty"
                return facts
            handle.seek(0)
            try:
                facts.update(_decoded_facts(handle, size))
            except Exception as exc:  # Pillow raises many types for bad data: a broken file.
                facts["error"] = _decoding_error(exc, handle)
            return facts
    except NotReadable as exc:
        return {"kind": "image", "bytes": 0, "sha256": None, "error": str(exc)}


def _decoded_facts(handle: BinaryIO, size: int) -> dict[str, Any]:
    from PIL import Image

    _quiet_bomb_warnings()
    with Image.open(handle) as image:
        width, height = image.size
        mode = image.mode
        if (
            shortfall := missing_data(handle, image.format, mode, (width, height), size)
        ) is not None:
            raise TruncatedImage(shortfall)
        _check_pixel_count(width, height)
        facts: dict[str, Any] = {
            "format": image.format,
            "width": width,
            "height": height,
            "mode": mode,
            "orientation": _orientation(image),
            "palette_alpha": mode == "P" and "transparency" in image.info,
        }
        if image.format == "PNG" and not _may_be_transparent(image, mode):
            image.verify()
            facts["transparent"] = False
            return facts
        _decode(image)
        facts["transparent"] = _has_transparency(image, mode)
        facts["likeness"] = likeness_hashes(image)
    return facts


class TruncatedImage(ValueError):
    """The file holds less pixel data than its header's size needs."""


class TooManyPixels(ValueError):
    """Over Pillow's decompression-bomb limit: Kura does not decode it."""


def _check_pixel_count(width: int, height: int) -> None:
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    if limit is not None and width * height > limit:
        raise TooManyPixels(
            f"{width}x{height} is {width * height:,} pixels, over Pillow's decompression-bomb "
            f"limit of {limit:,}; Musubi's Pillow warns above it and refuses above twice it"
        )


def _decode(image: Any) -> None:
    """Decode every pixel (JPEG at 1/8 scale: libjpeg still reads every entropy-coded byte,
    so a missing end is noticed) with truncated images refused."""
    from PIL import ImageFile

    if ImageFile.LOAD_TRUNCATED_IMAGES:
        raise RuntimeError("PIL.ImageFile.LOAD_TRUNCATED_IMAGES is on; integrity cannot be checked")
    if image.format == "JPEG":
        mode = image.mode
        image.draft(
            "L" if mode in ("L", "RGB") else None, hash_decode_size(image.width, image.height)
        )
    image.load()


def _quiet_bomb_warnings() -> None:
    """Pillow warns (on stderr) about images over its pixel limit; Kura reports them as
    findings instead (see :func:`_check_pixel_count`). Re-adding the same filter is a no-op,
    and re-adding it on every read survives code that resets the warning filters."""
    from PIL import Image

    warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)


def read_pixel_facts(path: Path) -> dict[str, Any]:
    """Decode an image fully: ``{"likeness": …}``, or ``{"error": …}`` when the pixel data is
    damaged even though the file's structure checked out."""
    from PIL import Image

    try:
        with open_regular(path, limit=MAX_IMAGE_BYTES, what="image") as (handle, _):
            _quiet_bomb_warnings()
            try:
                with Image.open(handle) as image:
                    _check_pixel_count(*image.size)
                    _decode(image)
                    return {"likeness": likeness_hashes(image)}
            except Exception as exc:  # Pillow raises many types for bad data: a broken file.
                return {"error": _decoding_error(exc, handle)}
    except NotReadable as exc:
        return {"error": str(exc)}


def _decoding_error(exc: Exception, handle: BinaryIO) -> str:
    """``Type: message`` of a decoding failure, without the handle's repr that Pillow puts
    in some messages ("cannot identify image file <_io.BufferedReader name=15>"): it names
    the file descriptor, a number that changes from one read to the next, so the same file
    would give a different problem each time (and a kept report would not match a new one)."""
    message = str(exc).replace(f" {handle!r}", "").replace(repr(handle), "the file")
    return f"{type(exc).__name__}: {message}"


def _may_be_transparent(image: Any, mode: str) -> bool:
    return mode in ALPHA_MODES or (mode == "P" and "transparency" in image.info)


def _orientation(image: Any) -> int | None:
    """The EXIF orientation tag, read without decoding pixels.

    For PNG, Pillow's ``getexif`` decodes the whole image when no eXIf chunk came before the
    pixel data, so only an early eXIf chunk (where encoders put it) is read."""
    from PIL import Image

    try:
        if image.format == "PNG":
            raw = image.info.get("exif")
            if not raw:
                return None
            exif = Image.Exif()
            exif.load(raw)
        else:
            exif = image.getexif()
        value = exif.get(ORIENTATION_TAG)
    except Exception:  # a damaged EXIF block does not make the pixels unreadable
        return None
    return int(value) if isinstance(value, int) else None


def _has_transparency(image: Any, mode: str) -> bool:
    """Whether any pixel is less than fully opaque (only asked of modes that can be)."""
    if mode in ALPHA_MODES:
        alpha = image.getchannel("A")
    elif mode == "P" and "transparency" in image.info:
        alpha = image.convert("RGBA").getchannel("A")
    else:
        return False
    low, _high = alpha.getextrema()
    return bool(low < 255)


def color_mode_issue(facts: Mapping[str, Any]) -> str | None:
    """What Musubi will do wrong with this image's colours, or ``None`` when nothing."""
    mode = facts.get("mode")
    if mode == "CMYK":
        return (
            "is CMYK; Musubi converts it with Pillow's plain CMYK→RGB formula (no colour "
            "profile), so colours shift and look washed out"
        )
    if mode in HIGH_BIT_MODES:
        return (
            f"is a {mode} (16/32-bit) image; Pillow's conversion to RGB clips every value above "
            "255, so most of the picture trains as white"
        )
    if not facts.get("transparent"):
        return None
    if mode == "RGBA":
        return (
            "has transparent pixels; Musubi drops the alpha channel when caching latents, so "
            "transparent areas train as whatever colour is stored under them (often black)"
        )
    return (
        f"is {mode} with transparency; Musubi converts it to RGB and the transparent areas "
        "take the colour stored under them"
    )
