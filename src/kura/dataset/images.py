"""Fast per-image facts: format, size, colour mode, EXIF orientation, integrity, likeness.

Integrity is checked by decoding, but cheaply: a JPEG is decoded at 1/8 scale through
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

import io
from pathlib import Path
from typing import Any

from kura.dataset.similarity import hash_decode_size, likeness_hashes, sha256_hex

__all__ = ["color_mode_issue", "read_image_facts", "read_pixel_facts"]

ORIENTATION_TAG = 0x0112
ALPHA_MODES = frozenset({"RGBA", "LA", "PA", "RGBa", "La"})
HIGH_BIT_MODES = frozenset({"I;16", "I;16B", "I;16L", "I;16N", "I", "F"})


def read_image_facts(path: Path) -> dict[str, Any]:
    """Everything an inspection needs from one image file, as a JSON-able dict.

    A file that cannot be read or decoded gets an ``error`` entry instead of raising."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return {"kind": "image", "bytes": 0, "sha256": None, "error": f"cannot read: {exc}"}
    facts: dict[str, Any] = {"kind": "image", "bytes": len(data), "sha256": sha256_hex(data)}
    if not data:
        facts["error"] = "empty"
        return facts
    try:
        facts.update(_decoded_facts(data))
    except Exception as exc:  # Pillow raises many types for bad data; each is a broken file.
        facts["error"] = f"{type(exc).__name__}: {exc}"
    return facts


def _decoded_facts(data: bytes) -> dict[str, Any]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
        mode = image.mode
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
        if image.format == "JPEG":
            image.draft("L" if mode in ("L", "RGB") else None, hash_decode_size(width, height))
        image.load()
        facts["transparent"] = _has_transparency(image, mode)
        facts["likeness"] = likeness_hashes(image)
    return facts


def read_pixel_facts(path: Path) -> dict[str, Any]:
    """Decode an image fully: ``{"likeness": …}``, or ``{"error": …}`` when the pixel data is
    damaged even though the file's structure checked out."""
    from PIL import Image

    try:
        with Image.open(Path(path)) as image:
            if image.format == "JPEG":
                image.draft("L", hash_decode_size(image.width, image.height))
            image.load()
            return {"likeness": likeness_hashes(image)}
    except Exception as exc:  # Pillow raises many types for bad data; each is a broken file.
        return {"error": f"{type(exc).__name__}: {exc}"}


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


def color_mode_issue(facts: dict[str, Any]) -> str | None:
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
