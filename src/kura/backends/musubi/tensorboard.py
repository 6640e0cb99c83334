"""Read scalar series from TensorBoard event files without TensorFlow.

An event file is a sequence of TFRecords: ``uint64 length``, ``uint32 masked_crc32c(length)``,
``length`` bytes of data, ``uint32 masked_crc32c(data)`` (all little-endian). Each record is
a serialized ``Event`` protobuf; the fields read here are::

    Event   { double wall_time = 1; int64 step = 2; Summary summary = 5; }
    Summary { repeated Value value = 1; }
    Value   { string tag = 1; float simple_value = 2; TensorProto tensor = 8; }
    TensorProto { int32 dtype = 1; bytes tensor_content = 4;
                  repeated float float_val = 5; repeated double double_val = 6; }

Musubi logs through Accelerate's TensorBoard tracker, i.e. ``torch.utils.tensorboard``'s
``add_scalar``, which writes ``simple_value``; tensor-encoded scalars (written by
TensorFlow 2 summaries) are read too. Musubi puts the files under
``<logging_dir>/<log_prefix><YYYYmmddHHMMSS>/network_train/``, so the search is recursive.
A record still being written at the end of a file is skipped, not an error.
"""

from __future__ import annotations

import struct
from pathlib import Path

from kura.errors import InvalidInput

__all__ = [
    "crc32c",
    "iter_records",
    "masked_crc32c",
    "read_scalars",
    "scalar_events",
    "scalars_in_file",
]

_DT_FLOAT, _DT_DOUBLE = 1, 2


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def iter_records(path: Path) -> list[bytes]:
    """The complete records of a TFRecord file; a damaged checksum is :class:`InvalidInput`."""
    data = Path(path).read_bytes()
    records: list[bytes] = []
    position = 0
    while position + 12 <= len(data):
        header = data[position : position + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[position + 8 : position + 12])
        if masked_crc32c(header) != length_crc:
            raise _damaged(path, position, "length checksum")
        end = position + 12 + length + 4
        if end > len(data):
            break  # the writer has not finished this record yet
        payload = data[position + 12 : position + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[end - 4 : end])
        if masked_crc32c(payload) != payload_crc:
            raise _damaged(path, position, "data checksum")
        records.append(payload)
        position = end
    return records


def _damaged(path: Path, position: int, what: str) -> InvalidInput:
    return InvalidInput(
        f"{path} is damaged: bad {what} in the record at byte {position}",
        hint="the event file was corrupted; delete it to read the others, the training log "
        "still holds the loss",
        path=path,
    )


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) for each field of a protobuf message."""
    out: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + length], pos + length
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _tensor_scalar(buf: bytes) -> float | None:
    dtype = None
    for number, wire, value in _fields(buf):
        if number == 1 and wire == 0:
            dtype = value
    for number, _, value in _fields(buf):
        if number == 5 and isinstance(value, bytes):
            return float(struct.unpack("<f", value[:4])[0])
        if number == 6 and isinstance(value, bytes):
            return float(struct.unpack("<d", value[:8])[0])
        if number == 4 and isinstance(value, bytes):
            if dtype == _DT_FLOAT and len(value) == 4:
                return float(struct.unpack("<f", value)[0])
            if dtype == _DT_DOUBLE and len(value) == 8:
                return float(struct.unpack("<d", value)[0])
    return None


def _value_scalar(buf: bytes) -> tuple[str, float] | None:
    tag: str | None = None
    scalar: float | None = None
    for number, wire, value in _fields(buf):
        if number == 1 and isinstance(value, bytes):
            tag = value.decode("utf-8", errors="replace")
        elif number == 2 and wire == 5 and isinstance(value, bytes):
            scalar = struct.unpack("<f", value)[0]
        elif number == 8 and isinstance(value, bytes) and scalar is None:
            scalar = _tensor_scalar(value)
    if tag is None or scalar is None:
        return None
    return tag, scalar


def scalar_events(path: Path) -> dict[str, list[tuple[int, float, float | None]]]:
    """{tag: [(step, value, wall time), …]} for one event file, in file order (the wall
    time is the event's, Unix seconds; None when the event has none)."""
    series: dict[str, list[tuple[int, float, float | None]]] = {}
    for record in iter_records(path):
        try:
            fields = _fields(record)
            step = 0
            wall: float | None = None
            summaries: list[bytes] = []
            for number, wire, value in fields:
                if number == 1 and wire == 1 and isinstance(value, bytes) and len(value) == 8:
                    wall = struct.unpack("<d", value)[0]
                elif number == 2 and wire == 0 and isinstance(value, int):
                    step = _signed64(value)
                elif number == 5 and isinstance(value, bytes):
                    summaries.append(value)
            for summary in summaries:
                for number, _, value in _fields(summary):
                    if number == 1 and isinstance(value, bytes):
                        found = _value_scalar(value)
                        if found is not None:
                            series.setdefault(found[0], []).append((step, found[1], wall))
        except (ValueError, struct.error) as exc:
            raise InvalidInput(
                f"{path} holds an event Kura cannot decode ({exc})",
                hint="the file may come from another program; move it out of the logging dir",
                path=path,
            ) from None
    return series


def scalars_in_file(path: Path) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value), …]} for one event file, in file order."""
    return {
        tag: [(step, value) for step, value, _ in points]
        for tag, points in scalar_events(path).items()
    }


def read_scalars(logging_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """All scalar series under ``logging_dir`` (searched recursively), each sorted by step."""
    merged: dict[str, list[tuple[int, float]]] = {}
    root = Path(logging_dir)
    if not root.exists():
        return merged
    for path in sorted(root.rglob("events.out.tfevents.*")):
        if not path.is_file():
            continue
        for tag, points in scalars_in_file(path).items():
            merged.setdefault(tag, []).extend(points)
    for points in merged.values():
        points.sort(key=lambda point: point[0])
    return merged
