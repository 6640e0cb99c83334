"""YAML that people edit: read and written round-trip (comments and key order kept). A
caller that only reads a file uses :mod:`kura.plainyaml` (libyaml, plain data).

Kura's own files never need anchors or aliases, so any alias is refused as the composer
meets it: an "alias bomb" (billion laughs) costs nothing to reject. Size, nesting depth and
integer length are bounded the same way (:mod:`kura.yamlrules`), checked on each event as
the composer takes it (one parse of the file, nothing constructed before the whole document
passed), so a 3,000-deep document or a 5,000-digit integer is a one-line error, not seconds
of CPU and a traceback. Duplicate keys are errors, not silent overwrites.
"""

from __future__ import annotations

import functools
import io
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
from ruamel.yaml.parser import RoundTripParser
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from kura.bounded import MAX_CONFIG_BYTES, decode_utf8, read_limited, too_deep, too_large
from kura.fsutil import atomic_write_text
from kura.yamlrules import (
    NUMBER_TAGS,
    alias_refused,
    check_depth,
    check_scalar,
    event_line,
    mapping_root,
    not_yaml,
)

__all__ = [
    "MAX_YAML_BYTES",
    "dump_yaml",
    "load_yaml",
    "parse_yaml",
    "write_yaml",
]

MAX_YAML_BYTES = MAX_CONFIG_BYTES


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
    yaml.Parser = functools.partial(_CheckedParser, source=source)
    try:
        data = yaml.load(text)
    except RecursionError:
        raise too_deep(source) from None
    except YAMLError as exc:
        raise not_yaml(source, exc) from None
    return mapping_root(data, source)


class _CheckedParser(RoundTripParser):
    """The round-trip parser, refusing aliases, nesting past ``MAX_NESTING_DEPTH`` and
    over-long integers as the composer takes each event: the document is parsed once, and
    a breach stops the parse where it is, before anything it would build."""

    def __init__(self, loader: Any, *, source: str) -> None:
        super().__init__(loader)
        self.kura_source = source
        self.kura_depth = 0

    def get_event(self) -> Any:
        event = super().get_event()
        self.kura_depth = _step(event, self.kura_depth, self.kura_source)
        return event


def _step(event: Event, depth: int, source: str) -> int:
    """The nesting depth after ``event``, refusing what :mod:`kura.yamlrules` refuses."""
    if isinstance(event, AliasEvent):
        raise alias_refused(source, event_line(event))
    if isinstance(event, CollectionStartEvent):
        check_depth(depth, source)
        return depth + 1
    if isinstance(event, CollectionEndEvent):
        return depth - 1
    if isinstance(event, ScalarEvent):
        numeric = (not event.style and event.tag is None) or str(event.tag) in NUMBER_TAGS
        check_scalar(event.value, numeric=numeric, source=source, line=event_line(event))
    return depth


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
