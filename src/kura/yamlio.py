"""YAML that people edit: read and written round-trip (comments and key order kept).

Kura's own files never need anchors or aliases, so any alias is refused before the
document is composed: an "alias bomb" (billion laughs) costs nothing to reject. Size,
nesting depth and integer length are bounded the same way (:mod:`kura.bounded`), checked on
the event stream before anything is composed, so a 3,000-deep document or a 5,000-digit
integer is a one-line error, not seconds of CPU and a traceback. Duplicate keys are errors,
not silent overwrites.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    Event,
    ScalarEvent,
)
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from kura.bounded import (
    MAX_CONFIG_BYTES,
    MAX_INTEGER_DIGITS,
    MAX_NESTING_DEPTH,
    decode_utf8,
    read_limited,
    too_deep,
    too_large,
    too_long_integer,
)
from kura.errors import InvalidInput
from kura.fsutil import atomic_write_text

__all__ = ["MAX_YAML_BYTES", "dump_yaml", "load_yaml", "parse_yaml", "write_yaml"]

MAX_YAML_BYTES = MAX_CONFIG_BYTES
_INTEGER = re.compile(r"[-+]?[0-9][0-9_]*")


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 100
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def parse_yaml(text: str, *, source: str = "<text>") -> Any:
    """Parse YAML text round-trip; refuse aliases, duplicate keys and non-mapping roots."""
    if len(text.encode("utf-8", errors="replace")) > MAX_YAML_BYTES:
        raise too_large(source, MAX_YAML_BYTES, "YAML file")
    yaml = _yaml()
    try:
        _check_events(yaml.parse(io.StringIO(text)), source)
        data = yaml.load(text)
    except RecursionError:
        raise too_deep(source) from None
    except YAMLError as exc:
        raise InvalidInput(
            f"{source} is not valid YAML: {_one_line(exc)}",
            hint="fix the syntax at the line shown, or restore the file from its last good copy",
            path=source,
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidInput(
            f"{source} must hold a mapping at the top level, found {type(data).__name__}",
            hint="the file should start with `key: value` lines",
            path=source,
        )
    return data


def _check_events(events: Any, source: str) -> None:
    """Refuse aliases, nesting past ``MAX_NESTING_DEPTH`` and over-long integers while the
    events stream by: nothing is composed, and a breach stops the parse where it is."""
    depth = 0
    for event in events:
        depth = _step(event, depth, source)


def _step(event: Event, depth: int, source: str) -> int:
    if isinstance(event, AliasEvent):
        mark = event.start_mark
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise InvalidInput(
            f"{source} uses a YAML alias{where}; Kura files allow no anchors or aliases",
            hint="write the value out in full where the alias (*name) stands",
            path=source,
        )
    if isinstance(event, CollectionStartEvent):
        if depth >= MAX_NESTING_DEPTH:
            raise too_deep(source)
        return depth + 1
    if isinstance(event, CollectionEndEvent):
        return depth - 1
    if isinstance(event, ScalarEvent) and not _encodable(event.value):
        mark = event.start_mark
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise InvalidInput(
            f"{source} holds a string that is not valid Unicode{where} (a lone surrogate "
            "such as \\ud800)",
            hint="remove that escape or write the character it stands for",
            path=source,
        )
    if isinstance(event, ScalarEvent) and not event.style:
        digits = len(event.value.lstrip("+-").replace("_", ""))
        if digits > MAX_INTEGER_DIGITS and _INTEGER.fullmatch(event.value):
            raise too_long_integer(source, digits)
    return depth


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def load_yaml(path: Path) -> Any:
    """Read a YAML file (round-trip) within Kura's bounds; errors name the file."""
    raw = read_limited(path, limit=MAX_YAML_BYTES, what="YAML file")
    return parse_yaml(decode_utf8(raw, path), source=str(path))


def dump_yaml(data: Any) -> str:
    buffer = io.StringIO()
    _yaml().dump(_quote_unusual_breaks(data), buffer)
    return buffer.getvalue()


_UNUSUAL_BREAKS = ("\x85", "\u2028", "\u2029")


def _quote_unusual_breaks(data: Any) -> Any:
    """Strings holding NEL/LS/PS must be double-quoted: ruamel writes them raw in single
    quotes, where a reader folds them into spaces and the value silently changes."""
    if isinstance(data, str):
        if any(c in data for c in _UNUSUAL_BREAKS):
            return DoubleQuotedScalarString(data)
        return data
    if isinstance(data, dict):
        for position, key in enumerate(list(data.keys())):
            value = _quote_unusual_breaks(data[key])
            quoted_key = _quote_unusual_breaks(key) if isinstance(key, str) else key
            if quoted_key is not key and hasattr(data, "insert"):
                del data[key]
                data.insert(position, quoted_key, value)
            elif quoted_key is not key:
                del data[key]
                data[quoted_key] = value
            else:
                data[key] = value
    elif isinstance(data, list):
        for index, item in enumerate(data):
            data[index] = _quote_unusual_breaks(item)
    return data


def write_yaml(path: Path, data: Any) -> None:
    """Write YAML atomically, keeping comments and order of a round-trip document."""
    atomic_write_text(path, dump_yaml(data))


def _one_line(exc: YAMLError) -> str:
    return " ".join(str(exc).split())[:300]
