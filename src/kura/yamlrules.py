"""What Kura refuses in any YAML text it reads, whichever parser reads it.

Both readers (round-trip, :mod:`kura.yamlio`; plain data, :mod:`kura.plainyaml`) check each
event as their composer takes it, so a breach stops the parse where it is, before anything
is built from it. The two parsers have their own event classes; these rules take the
event's values, and both readers give the same message for the same breach.
"""

from __future__ import annotations

import re
from typing import Any

from kura.bounded import MAX_INTEGER_DIGITS, MAX_NESTING_DEPTH, too_deep, too_long_integer
from kura.errors import InvalidInput

__all__ = [
    "NUMBER_TAGS",
    "alias_refused",
    "check_depth",
    "check_scalar",
    "encodable",
    "event_line",
    "mapping_root",
    "not_unicode",
    "not_yaml",
]

NUMBER_TAGS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})
"""Explicit tags that make a scalar a number whatever it looks like (``!!int``)."""

_INTEGER = re.compile(r"[-+][0-9_]+|[0-9][0-9_]*")
"""A decimal integer as both readers' resolvers take one (underscores allowed after its
first character; ``_1`` is a string)."""

_DIGITLESS_NUMBER = re.compile(r"[-+]_+|0[obx]_+|[-+]?\._+(?:[eE][-+]?[0-9]+)?")
"""Plain scalars both readers' resolvers take for a number although they hold no digit
(``+_``, ``0x_``, ``._``): converting one would fail deep inside the YAML library."""


def _where(line: int | None) -> str:
    return "" if line is None else f" (line {line})"


def event_line(event: Any) -> int | None:
    """The 1-based line a parser event starts on (either library's events); None where the
    parser gives no mark."""
    mark = event.start_mark
    return None if mark is None else int(mark.line) + 1


def not_yaml(source: str, detail: object) -> InvalidInput:
    """A syntax or construction error of the YAML library, on one line."""
    return InvalidInput(
        f"{source} is not valid YAML: {' '.join(str(detail).split())[:300]}",
        hint="fix the syntax at the line shown, or restore the file from its last good copy",
        path=source,
    )


def not_unicode(source: str, line: int | None) -> InvalidInput:
    return InvalidInput(
        f"{source} holds a string that is not valid Unicode{_where(line)} (a lone "
        "surrogate such as \\ud800)",
        hint="remove that escape or write the character it stands for",
        path=source,
    )


def mapping_root(data: Any, source: str) -> dict[str, Any]:
    """A parsed document's data, which must be a mapping (an empty document is one)."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidInput(
            f"{source} must hold a mapping at the top level, found {type(data).__name__}",
            hint="the file should start with `key: value` lines",
            path=source,
        )
    return data


def alias_refused(source: str, line: int | None) -> InvalidInput:
    return InvalidInput(
        f"{source} uses a YAML alias{_where(line)}; Kura files allow no anchors or aliases",
        hint="write the value out in full where the alias (*name) stands",
        path=source,
    )


def check_depth(depth: int, source: str) -> None:
    """Refuse opening a collection ``depth`` levels down (``MAX_NESTING_DEPTH``)."""
    if depth >= MAX_NESTING_DEPTH:
        raise too_deep(source)


def check_scalar(value: str, *, numeric: bool, source: str, line: int | None) -> None:
    """Refuse a scalar holding a lone surrogate, and one read as a number where it looks
    like one (``numeric``: plain and untagged, or tagged ``!!int``/``!!float``) that is an
    over-long integer or a number without digits."""
    if not value.isascii() and not encodable(value):
        raise not_unicode(source, line)
    if not numeric:
        return
    if len(value) > MAX_INTEGER_DIGITS and _INTEGER.fullmatch(value):
        digits = len(value.lstrip("+-").replace("_", ""))
        if digits > MAX_INTEGER_DIGITS:
            raise too_long_integer(source, digits)
    if "_" in value and _DIGITLESS_NUMBER.fullmatch(value):
        raise InvalidInput(
            f"{source} holds {value!r}{_where(line)}, which YAML reads as a number without digits",
            hint="write the number's digits, or quote the value to keep it as text",
            path=source,
        )


def encodable(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
