"""A tiny TensorBoard event-file writer for tests, independent of the reader under test.

Writes TFRecord framing with its own bitwise CRC-32C and hand-encoded ``Event`` protobufs,
as ``torch.utils.tensorboard`` does for ``add_scalar`` (``simple_value``), or as a tensor
(``TensorProto`` with ``float_val``) like TensorFlow 2 summaries.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path


def crc32c_bitwise(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    crc = crc32c_bitwise(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def length_delimited(number: int, payload: bytes) -> bytes:
    return key(number, 2) + varint(len(payload)) + payload


def scalar_value(tag: str, value: float, *, as_tensor: bool = False) -> bytes:
    body = length_delimited(1, tag.encode())
    if as_tensor:
        tensor = key(1, 0) + varint(1) + length_delimited(5, struct.pack("<f", value))
        body += length_delimited(8, tensor)
    else:
        body += key(2, 5) + struct.pack("<f", value)
    return body


def event(step: int, scalars: dict[str, float], *, as_tensor: bool = False) -> bytes:
    summary = b"".join(
        length_delimited(1, scalar_value(tag, value, as_tensor=as_tensor))
        for tag, value in scalars.items()
    )
    return (
        key(1, 1)
        + struct.pack("<d", time.time())
        + key(2, 0)
        + varint(step)
        + length_delimited(5, summary)
    )


def file_version_event() -> bytes:
    return key(1, 1) + struct.pack("<d", time.time()) + length_delimited(3, b"brain.Event:2")


def record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked(header)) + data + struct.pack("<I", masked(data))


class EventWriter:
    """Appends records to one ``events.out.tfevents.*`` file, flushing each."""

    def __init__(self, folder: Path, suffix: str = "host.1.0") -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"events.out.tfevents.{int(time.time())}.{suffix}"
        self.path.write_bytes(record(file_version_event()))

    def add(self, step: int, scalars: dict[str, float], *, as_tensor: bool = False) -> None:
        with open(self.path, "ab") as handle:
            handle.write(record(event(step, scalars, as_tensor=as_tensor)))
