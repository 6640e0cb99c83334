"""A strict, bounded reader for safetensors headers.

Only the first ``8 + N`` bytes of a file are read (``N`` capped at 100,000,000 bytes, the
reference limit), so checking a 24 GB file costs the header, not the file. The checks are
those of the reference reader plus duplicate-key rejection:

- the 8-byte little-endian header length fits the cap and the file;
- the header is UTF-8 JSON (leading/trailing JSON whitespace allowed), an object without
  duplicate keys at any level;
- ``__metadata__`` is absent, ``null`` or a string→string map;
- every tensor has a known dtype, a shape of non-negative integers and two offsets whose
  span equals ``dtype bits × prod(shape) / 8``;
- sorted by offset, tensors tile the data region with no gap or overlap, and the data
  region ends exactly at the end of the file.

Files that are not safetensors at all (GGUF, PyTorch zip or pickle checkpoints, a
``*.safetensors.index.json`` shard index) get a message naming what they are.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO, NamedTuple, cast

from kura.errors import InvalidInput

__all__ = [
    "DTYPE_BITS",
    "HEADER_CAP",
    "MAX_TENSORS",
    "SafetensorsHeader",
    "TensorInfo",
    "parse_header",
    "read_header",
    "read_header_bytes",
]

HEADER_CAP = 100_000_000
"""The reference reader's limit on the JSON header length (decimal bytes)."""

MAX_TENSORS = 200_000
"""Most tensor entries one header may list. The largest real checkpoints hold fewer than
20,000; a million tiny entries fit under ``HEADER_CAP`` and would cost seconds and GBs."""

DTYPE_BITS: Mapping[str, int] = MappingProxyType(
    {
        "BOOL": 8,
        "U8": 8,
        "I8": 8,
        "F8_E4M3": 8,
        "F8_E5M2": 8,
        "F8_E8M0": 8,
        "F8_E4M3FNUZ": 8,
        "F8_E5M2FNUZ": 8,
        "I16": 16,
        "U16": 16,
        "F16": 16,
        "BF16": 16,
        "I32": 32,
        "U32": 32,
        "F32": 32,
        "I64": 64,
        "U64": 64,
        "F64": 64,
        "C64": 64,
        "F4": 4,
        "F6_E2M3": 6,
        "F6_E3M2": 6,
    }
)
"""Bits per element of every dtype string the reference format (0.8.0) accepts."""
_BITS = dict(DTYPE_BITS)

_MAX_ELEMENTS = 2**64
_INT_TYPE = frozenset({int})
_INDEX_READ_CAP = 64 * 1024 * 1024
_JSON_WHITESPACE = b" \t\r\n"
_NOT_SAFETENSORS_HINT = (
    "pass a .safetensors file (convert the checkpoint, or download the safetensors build)"
)


class TensorInfo(NamedTuple):
    """One tensor entry of the header: dtype, logical shape, data offsets, element count.
    (A named tuple: headers hold thousands of these, and tuples are cheap to build.)"""

    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int
    numel: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class SafetensorsHeader:
    """What the header of one safetensors file says, validated against the file size."""

    path: Path
    size: int
    header_length: int
    header_digest: str
    tensors: Mapping[str, TensorInfo]
    metadata: Mapping[str, str]

    @property
    def data_start(self) -> int:
        return 8 + self.header_length


def read_header(path: Path | str) -> SafetensorsHeader:
    """Read and validate the header of ``path``; raise :class:`InvalidInput` if it is not a
    well-formed safetensors file."""
    raw, size = read_header_bytes(path)
    return parse_header(raw, size, path=Path(path))


def read_header_bytes(path: Path | str) -> tuple[bytes, int]:
    """The raw JSON header of ``path`` (without its length prefix) and the file's size, with
    every check :func:`read_header` makes before parsing (other formats are named)."""
    path = Path(path)
    try:
        with _open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            prefix = handle.read(8)
            length = struct.unpack("<Q", prefix)[0] if len(prefix) == 8 else None
            if length is None or length > HEADER_CAP or 8 + length > size:
                _refuse_other_formats(path, prefix, size, handle)
            if length is None:
                raise _invalid(
                    path,
                    f"only {size} bytes long; a safetensors file starts with an 8-byte header "
                    "length",
                )
            _check_length(path, length, size)
            raw = handle.read(length)
    except IsADirectoryError:
        raise InvalidInput(
            f"{path} is a folder, not a safetensors file",
            hint="name the .safetensors file inside it",
            path=path,
        ) from None
    except FileNotFoundError:
        raise InvalidInput(f"{path} does not exist", hint="check the path", path=path) from None
    except PermissionError:
        raise InvalidInput(
            f"{path} cannot be read (permission denied)", hint="fix the file permissions", path=path
        ) from None
    except OSError as exc:  # EIO from /proc/self/mem, a vanished network mount, …
        raise InvalidInput(
            f"{path} cannot be read: {exc.strerror or exc}",
            hint="name a safetensors file on a readable disk",
            path=path,
        ) from None
    if len(raw) != length:
        raise _invalid(
            path,
            f"the file ended while reading its {length}-byte header (it changed while being read?)",
        )
    if _is_pickle(prefix) and not raw.lstrip(_JSON_WHITESPACE).startswith(b"{"):
        _refuse_other_formats(path, prefix, size, None)
    return raw, size


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading only when it is a regular file, judged before opening (a
    FIFO would block the open and the read, a device never end) and again on the open
    descriptor (the name may have been swapped in between). ``/proc`` files are regular but
    report size 0: they are refused as too short before a byte is read."""
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(path)
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(path)
    if info.st_size < 8:
        raise _invalid(
            path,
            f"only {info.st_size} bytes long; a safetensors file starts with an 8-byte header "
            "length",
        )
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (
        info.st_dev,
        info.st_ino,
    ):
        os.close(fd)
        raise _not_regular(path)
    return os.fdopen(fd, "rb")


def _not_regular(path: Path) -> InvalidInput:
    return InvalidInput(
        f"{path} is not a regular file (a pipe, device or socket), not a safetensors file",
        hint="name the .safetensors file itself",
        path=path,
    )


def parse_header(raw: bytes, file_size: int, *, path: Path | str = "<bytes>") -> SafetensorsHeader:
    """Validate header bytes ``raw`` (without the 8-byte length prefix) for a file of
    ``file_size`` bytes. Separate from :func:`read_header` so it can be fuzzed in memory."""
    path = Path(path)
    _check_length(path, len(raw), file_size)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid(path, f"the header is not UTF-8 (byte {exc.start})") from None
    stripped = text.strip(" \t\r\n")
    if not stripped.startswith("{"):
        raise _invalid(path, "the header is not a JSON object")
    _check_tensor_count(path, raw.count(b'"data_offsets"'))
    try:
        document = json.loads(
            stripped, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant
        )
    except _DuplicateKey as dup:
        raise _invalid(path, f"the header repeats the key {dup.key!r}") from None
    except RecursionError:
        raise _invalid(path, "the header JSON is nested too deeply") from None
    except ValueError as exc:
        raise _invalid(path, f"the header is not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise _invalid(path, "the header is not a JSON object")
    metadata = _parse_metadata(path, document.pop("__metadata__", None))
    _check_tensor_count(path, len(document))
    tensors = _parse_entries(document) or {
        name: _parse_entry(path, name, entry) for name, entry in document.items()
    }
    _check_tiling(path, tensors, data_size=file_size - 8 - len(raw))
    return SafetensorsHeader(
        path=path,
        size=file_size,
        header_length=len(raw),
        header_digest=hashlib.sha256(raw).hexdigest(),
        tensors=MappingProxyType(tensors),
        metadata=MappingProxyType(metadata),
    )


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _invalid(path: Path, problem: str, hint: str = "") -> InvalidInput:
    return InvalidInput(
        f"{path}: not a valid safetensors file: {problem}",
        hint=hint
        or "the file is damaged or incomplete: download it again (a partial download looks like "
        "this)",
        path=path,
    )


def _check_tensor_count(path: Path, count: int) -> None:
    """Refuse more than ``MAX_TENSORS`` entries (checked on the raw bytes before the JSON is
    parsed, by counting ``"data_offsets"`` keys, and again on the parsed object)."""
    if count > MAX_TENSORS:
        raise _invalid(
            path,
            f"the header lists about {count:,} tensors, more than the {MAX_TENSORS:,} Kura "
            "reads (real checkpoints hold fewer than 20,000)",
            hint="this is not a model checkpoint Kura can check; pass the real weights file",
        )


def _check_length(path: Path, length: int, size: int) -> None:
    if length > HEADER_CAP:
        raise _invalid(
            path, f"its header length field says {length} bytes, over the {HEADER_CAP}-byte limit"
        )
    if 8 + length > size:
        raise _invalid(
            path, f"its header length field says {length} bytes but the file has only {size} bytes"
        )


def _refuse_other_formats(path: Path, prefix: bytes, size: int, handle: Any) -> None:
    """Name the format of files that are clearly not safetensors."""
    if prefix.startswith(b"GGUF"):
        raise InvalidInput(
            f"{path} is a GGUF file, not safetensors: usable only with ComfyUI-GGUF; "
            "Musubi Tuner and diffusers single-file loading need safetensors",
            hint="download the .safetensors build of this model",
            path=path,
        )
    if prefix.startswith(b"PK\x03\x04"):
        raise InvalidInput(
            f"{path} is a PyTorch zip checkpoint (.pt/.pth/.ckpt), not safetensors; "
            "Kura does not unpickle files to inspect them",
            hint=_NOT_SAFETENSORS_HINT,
            path=path,
        )
    if _is_pickle(prefix):
        raise InvalidInput(
            f"{path} is a legacy PyTorch pickle checkpoint (pickle protocol {prefix[1]}), not "
            "safetensors; Kura does not unpickle files to inspect them",
            hint=_NOT_SAFETENSORS_HINT,
            path=path,
        )
    if handle is not None and (
        prefix.lstrip(_JSON_WHITESPACE).startswith(b"{") or path.name.endswith(".json")
    ):
        _refuse_json(path, prefix, size, handle)


def _is_pickle(prefix: bytes) -> bool:
    """A pickle (protocol 2-5) starts with PROTO 0x80 and its version byte. A header length
    can start with the same two bytes, so callers ask only when the length is implausible
    or the "header" does not start with ``{``."""
    return len(prefix) >= 2 and prefix[0] == 0x80 and 2 <= prefix[1] <= 5


def _refuse_json(path: Path, prefix: bytes, size: int, handle: Any) -> None:
    if size > _INDEX_READ_CAP:
        raise InvalidInput(
            f"{path} looks like JSON text, not a safetensors file",
            hint=_NOT_SAFETENSORS_HINT,
            path=path,
        )
    try:
        document = json.loads((prefix + handle.read(size)).decode("utf-8"))
    except (ValueError, RecursionError):
        document = None
    weight_map = document.get("weight_map") if isinstance(document, dict) else None
    if isinstance(weight_map, dict):
        shards = sorted({str(v) for v in weight_map.values()})
        shown = ", ".join(shards[:8]) + (f" … ({len(shards)} files)" if len(shards) > 8 else "")
        raise InvalidInput(
            f"{path} is a sharded-model index (*.safetensors.index.json), not weights; it names "
            f"the shard files: {shown}",
            hint=f"pass the first shard ({shards[0]}) instead; its siblings are read with it"
            if shards
            else "pass a shard file",
            path=path,
        )
    raise InvalidInput(
        f"{path} is JSON text, not a safetensors file", hint=_NOT_SAFETENSORS_HINT, path=path
    )


def _parse_metadata(path: Path, raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _invalid(path, "__metadata__ is not an object of strings")
    for key, value in raw.items():
        if not isinstance(value, str):
            raise _invalid(path, f"__metadata__[{key!r}] is {type(value).__name__}, not a string")
    return dict(raw)


_PRINTABLE = re.compile(r"[\x00-\x1f]")


class _Shown:
    """A tensor name for messages, made printable only when a message is built."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return repr(_PRINTABLE.sub("?", self.name[:200]))


class _NotFast(Exception):
    """The bulk path met something it does not vouch for; the per-entry path decides."""


def _parse_entries(document: dict[str, Any]) -> dict[str, TensorInfo] | None:
    """Validate all entries in bulk (dimension and offset types checked once, at C speed);
    None when any entry needs the per-entry path, which accepts or names the problem."""
    rows: list[tuple[str, str, list[int], int, int]] = []
    numbers: list[Any] = []
    try:
        for name, entry in document.items():
            dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
            if type(shape) is not list or type(offsets) is not list or len(offsets) != 2:
                raise _NotFast
            if type(dtype) is not str or dtype not in _BITS:
                raise _NotFast
            numbers += shape
            numbers += offsets
            rows.append((name, dtype, shape, offsets[0], offsets[1]))
    except (TypeError, KeyError, _NotFast):
        return None
    if numbers and not (
        set(map(type, numbers)) <= _INT_TYPE and min(numbers) >= 0 and max(numbers) < _MAX_ELEMENTS
    ):
        return None
    out: dict[str, TensorInfo] = {}
    for name, dtype, shape, start, end in rows:
        numel = _product(shape)
        if numel is None or end < start:
            return None
        bits = numel * _BITS[dtype]
        if bits % 8 or end - start != bits // 8:
            return None
        out[name] = TensorInfo(dtype, tuple(shape), start, end, numel)
    return out


def _parse_entry(path: Path, name: str, entry: Any) -> TensorInfo:
    """Validate one tensor entry. The fast path accepts a well-formed entry with C-level
    checks; anything else goes to :func:`_explain_entry`, which names the problem."""
    if type(entry) is dict:
        dtype = entry.get("dtype")
        shape = entry.get("shape")
        offsets = entry.get("data_offsets")
        bits_per = _BITS.get(dtype) if type(dtype) is str else None
        if (
            bits_per is not None
            and type(offsets) is list
            and len(offsets) == 2
            and type(start := offsets[0]) is int
            and type(end := offsets[1]) is int
            and 0 <= start <= end < _MAX_ELEMENTS
            and _counts(shape)
        ):
            dims = cast("list[int]", shape)
            numel = _product(dims)
            if numel is not None:
                bits = numel * bits_per
                if bits % 8 == 0 and end - start == bits // 8:
                    return TensorInfo(cast("str", dtype), tuple(dims), start, end, numel)
    raise _explain_entry(path, name, entry)


def _counts(values: Any) -> bool:
    """A list of integers in [0, 2^64) (booleans excluded), checked without a Python loop."""
    if type(values) is not list:
        return False
    return not values or (
        set(map(type, values)) <= _INT_TYPE and min(values) >= 0 and max(values) < _MAX_ELEMENTS
    )


def _product(shape: list[int]) -> int | None:
    """The element count, or None past 2^64 (stopping early, so hostile shapes stay cheap)."""
    if 0 in shape:
        return 0
    if len(shape) <= 8:
        count = math.prod(shape)
        return count if count <= _MAX_ELEMENTS else None
    count = 1
    for dim in shape:
        count *= dim
        if count > _MAX_ELEMENTS:
            return None
    return count


def _explain_entry(path: Path, name: str, entry: Any) -> InvalidInput:
    shown = _Shown(name)
    if not isinstance(entry, dict):
        return _invalid(path, f"tensor {shown!r} is not an object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        return _invalid(
            path,
            f"tensor {shown!r} has unknown dtype {str(dtype)[:40]!r} (known: "
            f"{', '.join(DTYPE_BITS)})",
        )
    shape = entry.get("shape")
    if not _counts(shape):
        return _invalid(
            path,
            f"tensor {shown!r} has a shape that is not a list of integers in [0, 2^64)",
        )
    offsets = cast("list[int]", entry.get("data_offsets"))
    if not _counts(offsets) or len(offsets) != 2:
        return _invalid(
            path, f"tensor {shown!r} needs data_offsets [begin, end] of two non-negative integers"
        )
    start, end = offsets
    if end < start:
        return _invalid(path, f"tensor {shown!r} ends (offset {end}) before it begins ({start})")
    numel = _product(cast("list[int]", shape))
    if numel is None:
        return _invalid(path, f"tensor {shown!r} has more than 2^64 elements")
    bits = numel * DTYPE_BITS[dtype]
    if bits % 8:
        return _invalid(path, f"tensor {shown!r}: {numel} {dtype} elements do not fill whole bytes")
    return _invalid(
        path,
        f"tensor {shown!r} spans {end - start} bytes but {dtype} × {shape} needs {bits // 8}",
    )


def _check_tiling(path: Path, tensors: Mapping[str, TensorInfo], *, data_size: int) -> None:
    position = 0
    for name, info in sorted(tensors.items(), key=lambda item: (item[1].start, item[1].end)):
        if info.start != position:
            shown = _PRINTABLE.sub("?", name[:200])
            what = "leaves a gap before" if info.start > position else "overlaps"
            raise _invalid(
                path,
                f"tensor {shown!r} at offset {info.start} {what} the previous data (expected "
                f"offset {position})",
            )
        position = info.end
    if position != data_size:
        if position > data_size:
            problem = f"the tensors need {position} data bytes but the file holds {data_size}"
            hint = (
                "the file is truncated: download it again (an interrupted download looks like this)"
            )
        else:
            problem = (
                f"{data_size - position} bytes follow the last tensor "
                "(the data region must end at the end of the file)"
            )
            hint = "the file has trailing bytes: download it again, or re-save it with safetensors"
        raise _invalid(path, problem, hint)
