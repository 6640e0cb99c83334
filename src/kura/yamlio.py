"""YAML that people edit: read and written round-trip (comments and key order kept), and
read fast (libyaml, plain data) when the caller only reads (:func:`read_yaml`).

Kura's own files never need anchors or aliases, so any alias is refused as the composer
meets it: an "alias bomb" (billion laughs) costs nothing to reject. Size, nesting depth and
integer length are bounded the same way (:mod:`kura.bounded`), checked on each event as the
composer takes it (one parse of the file, nothing constructed before the whole document
passed), so a 3,000-deep document or a 5,000-digit integer is a one-line error, not seconds
of CPU and a traceback. Duplicate keys are errors, not silent overwrites.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import re
from pathlib import Path
from typing import Any, cast

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

__all__ = [
    "MAX_YAML_BYTES",
    "dump_yaml",
    "load_yaml",
    "parse_yaml",
    "read_yaml",
    "write_yaml",
]

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
    yaml.Parser = functools.partial(_CheckedParser, source=source)
    try:
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


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML file as plain data, for a caller that will not write it back.

    The same refusals as :func:`load_yaml` (bounds, aliases, duplicate keys, non-Unicode
    strings, a non-mapping root), through libyaml's C parser: several times faster than the
    round-trip parser, which only a command about to rewrite the file needs."""
    raw = read_limited(path, limit=MAX_YAML_BYTES, what="YAML file")
    return parse_plain_yaml(decode_utf8(raw, path), source=str(path))


def parse_plain_yaml(text: str, *, source: str) -> dict[str, Any]:
    """``text`` parsed as :func:`read_yaml` does. A text parsed before in this process is
    not parsed again: its data is copied from the last parse (several times faster; one
    command or sweep trial reads the same run.yaml and dataset files several times)."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    known = _PARSED.get(key)
    if known is None:
        known = _parse_plain_yaml(text, source=source)
        if len(_PARSED) >= _PARSED_KEPT:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = known
    return copy.deepcopy(known)


_PARSED: dict[bytes, dict[str, Any]] = {}
_PARSED_KEPT = 256


def _parse_plain_yaml(text: str, *, source: str) -> dict[str, Any]:
    import yaml as pyyaml

    loader = _FastLoader(text, source)
    try:
        data = loader.get_single_data()
    except RecursionError:
        raise too_deep(source) from None
    except pyyaml.YAMLError as exc:
        if "invalid Unicode character" in str(exc):
            raise InvalidInput(
                f"{source} holds a string that is not valid Unicode (a lone surrogate such "
                "as \\ud800)",
                hint="remove that escape or write the character it stands for",
                path=source,
            ) from None
        raise InvalidInput(
            f"{source} is not valid YAML: {' '.join(str(exc).split())[:300]}",
            hint="fix the syntax at the line shown, or restore the file from its last good copy",
            path=source,
        ) from None
    finally:
        loader.dispose()
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidInput(
            f"{source} must hold a mapping at the top level, found {type(data).__name__}",
            hint="the file should start with `key: value` lines",
            path=source,
        )
    return data


def _line(event: Any) -> str:
    """The 1-based line an event starts on ("?" where libyaml gives no mark)."""
    mark = event.start_mark
    return "?" if mark is None else str(mark.line + 1)


def _fast_step(event: Any, depth: int, source: str) -> int:
    """:func:`_step` for libyaml's events (the same rules, its own event classes; scalars,
    the commonest event, tested first)."""
    import yaml as pyyaml

    if isinstance(event, pyyaml.ScalarEvent):
        value = event.value
        if not _encodable(value):
            raise InvalidInput(
                f"{source} holds a string that is not valid Unicode (line "
                f"{_line(event)}; a lone surrogate such as \\ud800)",
                hint="remove that escape or write the character it stands for",
                path=source,
            )
        if len(value) > MAX_INTEGER_DIGITS and not event.style and event.implicit[0]:
            digits = len(value.lstrip("+-").replace("_", ""))
            if digits > MAX_INTEGER_DIGITS and _INTEGER.fullmatch(value):
                raise too_long_integer(source, digits)
        return depth
    if isinstance(event, pyyaml.AliasEvent):
        raise InvalidInput(
            f"{source} uses a YAML alias (line {_line(event)}); Kura files "
            "allow no anchors or aliases",
            hint="write the value out in full where the alias (*name) stands",
            path=source,
        )
    if isinstance(event, pyyaml.CollectionStartEvent):
        if depth >= MAX_NESTING_DEPTH:
            raise too_deep(source)
        return depth + 1
    if isinstance(event, pyyaml.CollectionEndEvent):
        return depth - 1
    return depth


def _fast_loader() -> type:
    import yaml as pyyaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    parser: Any = _c_parser()

    class Loader(parser, Composer, SafeConstructor, Resolver):  # type: ignore[misc]
        """libyaml's parser under PyYAML's safe composer and constructor, with YAML 1.2's
        core schema (as the round-trip reader has it: ``no`` and ``on`` are strings, not
        booleans; ``010`` is ten), refusing duplicate keys (PyYAML keeps the last).

        The composer is PyYAML's own (Python) rather than libyaml's so that each event
        passes through :meth:`get_event`, where Kura's refusals run: one parse of the
        file, each breach stopped before the composer acts on it."""

        yaml_implicit_resolvers: dict[str, list[Any]] = {}
        get_single_node = Composer.get_single_node
        get_node = Composer.get_node
        check_node = Composer.check_node

        def __init__(self, stream: Any, source: str) -> None:
            parser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.kura_source = source
            self.kura_depth = 0

        def get_event(self) -> Any:
            event = parser.get_event(self)
            self.kura_depth = _fast_step(event, self.kura_depth, self.kura_source)
            return event

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise pyyaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
            mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return mapping

    loader: Any = Loader
    loader.add_constructor("tag:yaml.org,2002:map", Loader.construct_yaml_map)
    loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    for tag, pattern, first in _CORE_SCHEMA:
        loader.add_implicit_resolver(tag, re.compile(pattern, re.X), list(first))
    return Loader


_CORE_SCHEMA = (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ("~", "n", "N", "")),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (
        "tag:yaml.org,2002:int",
        r"^(?:[-+]?[0-9_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+)$",
        "-+0123456789",
    ),
    (
        "tag:yaml.org,2002:float",
        r"""^(?:[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""",
        "-+0123456789.",
    ),
    (
        "tag:yaml.org,2002:timestamp",
        r"""^(?:[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}
        (?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?)$""",
        "0123456789",
    ),
)
"""YAML 1.2's core schema plus the timestamps and ``0b`` integers the round-trip reader
resolves: the implicit types both readers agree on."""


def _construct_int(loader: Any, node: Any) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    if digits.startswith("0o"):
        return sign * int(digits[2:], 8)
    if digits.startswith("0x"):
        return sign * int(digits[2:], 16)
    if digits.startswith("0b"):
        return sign * int(digits[2:], 2)
    return sign * int(digits)


class _LazyLoader:
    """The loader class, built on first use (PyYAML is not imported at start-up)."""

    _cls: type | None = None

    def __call__(self, stream: Any, source: str) -> Any:
        if _LazyLoader._cls is None:
            _LazyLoader._cls = _fast_loader()
        return _LazyLoader._cls(stream, source)


def _c_parser() -> type:
    """libyaml's parser; PyYAML's pure-Python one where PyYAML was built without it (the
    same events, slower)."""
    try:
        from yaml._yaml import CParser
    except ImportError:
        from yaml.parser import Parser
        from yaml.reader import Reader
        from yaml.scanner import Scanner

        class PurePythonParser(Reader, Scanner, Parser):
            def __init__(self, stream: Any) -> None:
                Reader.__init__(self, stream)
                Scanner.__init__(self)
                Parser.__init__(self)

        return PurePythonParser
    return cast(type, CParser)


_FastLoader: Any = _LazyLoader()


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
