"""Images whose header promises more pixels than the file holds are broken media, even when
the decoder stays silent; real images of every kind pass."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest
from dataset_builders import encode, picture
from PIL import Image

from kura.dataset.images import read_image_facts


def _lying_jpeg(width: int, height: int) -> bytes:
    """A 16x16 JPEG (scan data and end marker intact) whose frame header says width x height:
    libjpeg decodes it with a warning only and fills the rest with grey."""
    data = bytearray(encode(picture(16, 16), "JPEG"))
    sof = data.index(b"\xff\xc0")
    data[sof + 5 : sof + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def _png(width: int, height: int, rows: bytes, *, color_type: int = 2, depth: int = 8) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_the_lying_jpeg_is_silent_in_pillow_but_broken_for_kura(tmp_path: Path) -> None:
    path = tmp_path / "lie.jpg"
    path.write_bytes(_lying_jpeg(12000, 12000))
    with Image.open(path) as image:
        image.draft("L", (1500, 1500))
        image.load()  # no error: this is the hole the payload check closes
    facts = read_image_facts(path)
    assert facts["error"].startswith("TruncatedImage: the header says 12000x12000")
    assert "needs at least" in facts["error"]


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_the_lying_png_passes_verify_but_is_broken_for_kura(tmp_path: Path) -> None:
    path = tmp_path / "lie.png"
    path.write_bytes(_png(12000, 12000, b"\x00" + b"\x00" * 3 * 16))
    with Image.open(path) as image:
        image.verify()  # CRCs and chunk order are fine
    assert read_image_facts(path)["error"].startswith("TruncatedImage: the header says 12000x12000")


@pytest.mark.parametrize(
    ("fmt", "options", "mode"),
    [
        ("JPEG", {}, "RGB"),
        ("JPEG", {"progressive": True, "quality": 5}, "RGB"),
        ("JPEG", {"subsampling": 2, "quality": 1}, "RGB"),
        ("JPEG", {"quality": 1}, "L"),
        ("PNG", {"optimize": True}, "1"),
        ("PNG", {"optimize": True}, "L"),
        ("PNG", {"optimize": True, "bits": 2}, "P"),
        ("PNG", {"optimize": True}, "RGBA"),
    ],
)
def test_real_flat_images_are_not_called_truncated(
    tmp_path: Path, fmt: str, options: dict[str, object], mode: str
) -> None:
    """The most compressible real pictures: large, flat, at the lowest quality."""
    image = Image.new("RGB", (4096, 4096), (128, 128, 128)).convert(mode)
    if mode == "P":
        image = image.quantize(4)
    path = tmp_path / f"flat.{fmt.lower()}"
    path.write_bytes(encode(image, fmt, **options))
    facts = read_image_facts(path)
    assert "error" not in facts, facts["error"]
    assert (facts["width"], facts["height"]) == (4096, 4096)


def test_an_image_over_pillows_pixel_limit_is_a_finding_not_a_decode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 64 * 64 - 1)
    path = tmp_path / "bomb.webp"
    path.write_bytes(encode(picture(64, 64), "WEBP"))
    monkeypatch.setattr(Image.Image, "load", lambda self: pytest.fail("decoded"))
    facts = read_image_facts(path)
    assert facts["error"].startswith("TooManyPixels: 64x64 is 4,096 pixels")
    assert "decompression-bomb limit of 4,095" in facts["error"]


def test_a_truncated_png_without_its_end_is_still_broken(tmp_path: Path) -> None:
    data = encode(picture(256, 256), "PNG")
    path = tmp_path / "cut.png"
    path.write_bytes(data[: len(data) // 2])
    assert "error" in read_image_facts(path)
    buffer = io.BytesIO(data)
    assert Image.open(buffer).size == (256, 256)
