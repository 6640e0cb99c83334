"""Bounds on the files Kura reads, and the readers that enforce them before parsing.

A file Kura parses (run.yaml, dataset.yaml, kura.toml, approval.json, inspection.json, a
safetensors header) may have been written by someone hostile or damaged by a crash. Every
reader checks the same three bounds, in this order, and turns a breach into
:class:`~kura.errors.InvalidInput` naming the file:

* size: at most ``MAX_CONFIG_BYTES``; the file is stat'ed and at most ``limit + 1`` bytes
  are read, so a 1 GB file costs nothing, and only regular files are opened (a FIFO or
  ``/dev/zero`` named ``run.yaml`` neither blocks nor grows);
* nesting: at most ``MAX_NESTING_DEPTH`` levels of mappings/lists;
* integers: at most ``MAX_INTEGER_DIGITS`` digits (Python refuses to convert more than
  4,300 anyway, with a ``ValueError`` that would otherwise escape as a traceback).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from kura.errors import InvalidInput

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_INTEGER_DIGITS",
    "MAX_NESTING_DEPTH",
    "check_parsed",
    "decode_utf8",
    "load_json",
    "parse_json",
    "read_limited",
    "read_text",
    "too_deep",
    "too_large",
    "too_long_integer",
]

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""Largest config/state file Kura reads (run.yaml, dataset.yaml, kura.toml, *.json)."""

MAX_NESTING_DEPTH = 64
"""Deepest nesting of mappings and lists accepted in a file Kura parses (its own files
nest fewer than 10 levels)."""

MAX_INTEGER_DIGITS = 64
"""Longest integer literal accepted (the largest real value, a 64-bit offset, has 20)."""
_INTEGER_CEILING = 10**MAX_INTEGER_DIGITS


def read_limited(path: Path, *, limit: int = MAX_CONFIG_BYTES, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, refused when larger than ``limit``.

    Missing, unreadable, special (FIFO, device, folder) and oversized files all raise
    :class:`InvalidInput` naming the file; nothing past ``limit + 1`` bytes is read."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InvalidInput(f"{path} does not exist", hint="check the path", path=path) from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", path=path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(
                f"{path} is not a regular file",
                hint=f"replace it with the {what} itself (not a folder, device, pipe or socket)",
                path=path,
            )
        if info.st_size > limit:
            raise too_large(path, limit, what)
        data = _read_up_to(fd, limit + 1)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", path=path) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise too_large(path, limit, what)
    return data


def _read_up_to(fd: int, count: int) -> bytes:
    chunks: list[bytes] = []
    left = count
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def too_large(path: Path | str, limit: int, what: str) -> InvalidInput:
    return InvalidInput(
        f"{path} is larger than the {_size(limit)} a {what} may hold",
        hint="Kura's own files are small; check that the right file is named, or restore it "
        "from its last good copy",
        path=path,
    )


def _size(limit: int) -> str:
    mib = limit / (1024 * 1024)
    return f"{mib:g} MiB" if mib >= 1 else f"{limit} bytes"


def decode_utf8(data: bytes, source: Path | str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{source} is not UTF-8 text (byte {exc.start})", hint="save it as UTF-8", path=source
        ) from None


def read_text(path: Path, *, what: str = "text file", limit: int = MAX_CONFIG_BYTES) -> str:
    """A regular file of UTF-8 text within ``limit`` (a Markdown file a person may edit:
    notes.md, plan.md); bytes that are not UTF-8 are InvalidInput naming the file."""
    return decode_utf8(read_limited(path, limit=limit, what=what), path)


def too_deep(source: Path | str, depth: int | None = None) -> InvalidInput:
    found = f" ({depth} levels)" if depth is not None else ""
    return InvalidInput(
        f"{source} nests mappings or lists deeper than {MAX_NESTING_DEPTH} levels{found}",
        hint="Kura's files are shallow: the file is damaged or not the one meant; restore it",
        path=source,
    )


def too_long_integer(source: Path | str, digits: int | None = None) -> InvalidInput:
    found = f" ({digits} digits)" if digits is not None else ""
    return InvalidInput(
        f"{source} holds an integer longer than {MAX_INTEGER_DIGITS} digits{found}",
        hint="no setting needs a number that large: correct or remove that value",
        path=source,
    )


def check_parsed(value: Any, source: Path | str) -> None:
    """Refuse parsed data nested deeper than ``MAX_NESTING_DEPTH`` or holding an integer
    longer than ``MAX_INTEGER_DIGITS`` (walked without recursion)."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, int) and abs(item) >= _INTEGER_CEILING:
            raise too_long_integer(source)
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= MAX_NESTING_DEPTH:
            raise too_deep(source)
        pending.extend((child, depth + 1) for child in children)


def parse_json(text: str, source: Path | str) -> Any:
    """Strict JSON (no NaN/Infinity) within the nesting and integer bounds. (The C decoder
    meets deep nesting with a prompt RecursionError, so no pre-scan is needed.)"""
    try:
        value = json.loads(text, parse_int=_bounded_int, parse_constant=_no_constant)
    except _LongInteger as exc:
        raise too_long_integer(source, exc.digits) from None
    except RecursionError:
        raise too_deep(source) from None
    except ValueError as exc:
        raise InvalidInput(
            f"{source} is not valid JSON: {exc}",
            hint="restore the file from its last good copy, or run the command that writes it",
            path=source,
        ) from None
    check_parsed(value, source)
    return value


def load_json(path: Path, *, limit: int = MAX_CONFIG_BYTES) -> Any:
    """Read and parse one of Kura's JSON files within every bound; errors name the file."""
    return parse_json(decode_utf8(read_limited(path, limit=limit, what="JSON file"), path), path)


class _LongInteger(ValueError):
    def __init__(self, digits: int) -> None:
        super().__init__(f"{digits} digits")
        self.digits = digits


def _bounded_int(literal: str) -> int:
    digits = len(literal.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise _LongInteger(digits)
    return int(literal)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
