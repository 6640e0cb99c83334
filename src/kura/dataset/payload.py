"""Does an image file hold enough data for the size its header states?

A decoder that meets the end of the data early does not always say so: libjpeg treats a
scan that stops before the last row, followed by a proper end marker, as a *warning*
(Pillow silences it) and fills the rest with grey, and Pillow's PNG ``verify`` checks chunk
CRCs but not how many rows the compressed data holds. So a JPEG whose header says
12000×12000 but holds 16×16 of data decodes "fine". These checks catch such lies from the
header and the file size alone, with bounds no real encoder can beat:

* JPEG (Huffman-coded, the only kind Musubi's data is in practice): every 8×8 block of every
  component costs at least one bit (its DC code), so the bytes after the first scan header
  must number at least ``blocks / 8``;
* PNG: deflate never compresses better than 1032:1, so the file must hold at least
  ``raw bytes / 1032`` where the raw bytes are the filtered rows (counted at the lowest bit
  depth the mode allows, so the bound never overstates).
"""

from __future__ import annotations

import math
import struct
from typing import BinaryIO

__all__ = ["DEFLATE_MAX_RATIO", "missing_data"]

DEFLATE_MAX_RATIO = 1032
_HUFFMAN_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7})
_ARITHMETIC_SOF = frozenset({0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_HEADER_READ_CAP = 4 * 1024 * 1024
# Fewest bits per pixel each Pillow mode can come from (2/4-bit PNGs open as "L" or "P").
_MIN_BITS = {"RGB": 24, "RGBA": 32, "LA": 16, "I;16": 16, "I;16B": 16, "I": 16, "CMYK": 32}


def missing_data(
    handle: BinaryIO, image_format: str | None, mode: str, dims: tuple[int, int], size: int
) -> str | None:
    """Why the file cannot hold the pixels its header promises, or ``None`` when it can.

    ``handle`` is the open file (it is re-positioned); ``size`` is its length in bytes."""
    if image_format == "JPEG":
        handle.seek(0)
        return _jpeg_shortfall(handle.read(min(size, _HEADER_READ_CAP)), size)
    if image_format == "PNG":
        return _png_shortfall(mode, dims, size)
    return None


def _png_shortfall(mode: str, dims: tuple[int, int], size: int) -> str | None:
    """A PNG of ``dims`` in ``mode`` needs at least raw/1032 bytes; ``size`` is the file's."""
    width, height = dims
    row = 1 + math.ceil(width * _MIN_BITS.get(mode, 1) / 8)
    needed = height * row // DEFLATE_MAX_RATIO
    if size >= needed:
        return None
    return (
        f"the header says {width}x{height} but the file holds only {size:,} bytes; even "
        f"perfectly compressible pixels need {needed:,} (the pixel data is truncated)"
    )


def _jpeg_shortfall(head: bytes, size: int) -> str | None:
    frame: tuple[int, int, list[tuple[int, int]]] | None = None
    coding = "huffman"
    position = 2
    while position + 4 <= len(head):
        if head[position] != 0xFF:
            return None  # not a marker where one must be: the decoder judges this file
        marker = head[position + 1]
        if marker == 0xFF:
            position += 1
            continue
        if 0xD0 <= marker <= 0xD8 or marker == 0x01:
            position += 2
            continue
        (length,) = struct.unpack(">H", head[position + 2 : position + 4])
        segment = head[position + 4 : position + 2 + length]
        if marker in _HUFFMAN_SOF or marker in _ARITHMETIC_SOF:
            frame = _frame(segment)
            coding = "arithmetic" if marker in _ARITHMETIC_SOF else "huffman"
        if marker == 0xDA:
            if frame is None or coding != "huffman":
                return None
            return _compare(frame, size - (position + 2 + length))
        position += 2 + length
    return None


def _frame(segment: bytes) -> tuple[int, int, list[tuple[int, int]]] | None:
    if len(segment) < 6:
        return None
    height, width, count = struct.unpack(">HHB", segment[1:6])
    sampling = [
        (segment[7 + 3 * i] >> 4, segment[7 + 3 * i] & 0x0F)
        for i in range(count)
        if 8 + 3 * i <= len(segment)
    ]
    return width, height, sampling


def _compare(frame: tuple[int, int, list[tuple[int, int]]], available: int) -> str | None:
    width, height, sampling = frame
    if not sampling or width == 0 or height == 0:
        return None
    h_max = max(h for h, _ in sampling) or 1
    v_max = max(v for _, v in sampling) or 1
    blocks = sum(
        math.ceil(math.ceil(width * h / h_max) / 8) * math.ceil(math.ceil(height * v / v_max) / 8)
        for h, v in sampling
    )
    needed = blocks // 8
    if available >= needed:
        return None
    return (
        f"the header says {width}x{height} but only {max(available, 0):,} bytes of image data "
        f"follow it; {width}x{height} needs at least {needed:,} (the pixel data is truncated "
        "and the rest would decode as grey)"
    )
