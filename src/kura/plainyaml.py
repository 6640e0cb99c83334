"""YAML read as plain data (dicts, lists, scalars), for a caller that will not write the
file back: libyaml's parser, YAML 1.2's core schema as the round-trip reader
(:mod:`kura.yamlio`) resolves it, and the same refusals (:mod:`kura.yamlrules`, duplicate
keys, a root that is not a mapping).

Two paths give one answer. The quick path builds the data straight from libyaml's events,
for the subset Kura's own files are written in: untagged mappings, sequences and scalars,
scalar keys, one document. It gives up on anything else (an alias, a tag, a collection as
a key, a duplicate key, a timestamp, a syntax error, a scalar a refusal might apply to) and
the full path reads the text again: libyaml's events under PyYAML's composer and
constructor, where each refusal runs with its message and every other YAML form is
understood. The quick path is several times faster (a run.yaml in about a quarter of the
time), which the first ``kura run list`` after a sweep of hundreds of runs spends on parsing.
"""

from __future__ import annotations

import hashlib
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from kura.bounded import (
    MAX_CONFIG_BYTES,
    MAX_INTEGER_DIGITS,
    MAX_NESTING_DEPTH,
    decode_utf8,
    read_limited,
    too_deep,
)
from kura.yamlrules import (
    NUMBER_TAGS,
    alias_refused,
    check_depth,
    check_scalar,
    encodable,
    event_line,
    mapping_root,
    not_unicode,
    not_yaml,
)

__all__ = ["parse_plain_yaml", "read_yaml"]


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML file as plain data, within Kura's bounds; errors name the file."""
    raw = read_limited(path, limit=MAX_CONFIG_BYTES, what="YAML file")
    return parse_plain_yaml(decode_utf8(raw, path), source=str(path))


def parse_plain_yaml(text: str, *, source: str) -> dict[str, Any]:
    """``text`` parsed as :func:`read_yaml` does; each call's data is its caller's own.

    A text parsed before in this process is not parsed again (one command or sweep trial
    reads the same run.yaml and dataset files several times): the last parse is kept
    pickled, which the first reader pays a few microseconds for and each later one
    unpickles several times faster than a deep copy."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    known = _PARSED.get(key)
    if known is not None:
        data: dict[str, Any] = pickle.loads(known)
        return data
    data = _parse(text, source=source)
    if len(_PARSED) >= _PARSED_KEPT:
        _PARSED.pop(next(iter(_PARSED)))
    _PARSED[key] = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    return data


_PARSED: dict[bytes, bytes] = {}
_PARSED_KEPT = 256


def _parse(text: str, *, source: str) -> dict[str, Any]:
    data = quick_build(text)
    if data is UNUSUAL:
        data = full_load(text, source=source)
    return mapping_root(data, source)


UNUSUAL: Any = object()
"""What :func:`quick_build` returns for a text outside its subset."""

_NO_KEY: Any = object()


def quick_build(text: str) -> Any:
    """The data of ``text`` built straight from libyaml's events, or :data:`UNUSUAL` when
    the text is outside the subset this path reads (see the module docstring)."""
    from yaml import (
        AliasEvent,
        DocumentStartEvent,
        MappingEndEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceEndEvent,
        SequenceStartEvent,
        StreamEndEvent,
        YAMLError,
    )

    parser = _parser_class()(text)
    open_collections: list[Any] = []
    pending_keys: list[Any] = []  # for each open mapping, its key awaiting a value
    root: Any = None
    documents = 0
    try:
        while True:
            event = parser.get_event()
            kind = type(event)
            if kind is ScalarEvent:
                if event.tag is not None:
                    return UNUSUAL
                item = event.value
                if not item.isascii() and not encodable(item):
                    return UNUSUAL
                if event.implicit[0] and (resolvers := _RESOLVERS.get(item[:1])) is not None:
                    item = _resolved(item, resolvers)
                    if item is UNUSUAL:
                        return UNUSUAL
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                if event.tag is not None or len(open_collections) >= MAX_NESTING_DEPTH:
                    return UNUSUAL
                item = {} if kind is MappingStartEvent else []
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                if kind is MappingEndEvent:
                    pending_keys.pop()
                open_collections.pop()
                continue
            elif kind is DocumentStartEvent:
                documents += 1
                if documents > 1:
                    return UNUSUAL
                continue
            elif kind is StreamEndEvent:
                return root
            elif kind is AliasEvent:
                return UNUSUAL
            else:  # the stream's start, a document's end
                continue
            if not open_collections:
                root = item
            elif type(top := open_collections[-1]) is list:
                top.append(item)
            elif pending_keys[-1] is _NO_KEY:
                if type(item) is dict or type(item) is list or item in top:
                    return UNUSUAL  # a collection as a key, or a duplicate key
                pending_keys[-1] = item
            else:
                top[pending_keys[-1]] = item
                pending_keys[-1] = _NO_KEY
            if kind is MappingStartEvent:
                open_collections.append(item)
                pending_keys.append(_NO_KEY)
            elif kind is SequenceStartEvent:
                open_collections.append(item)
    except YAMLError:
        return UNUSUAL
    finally:
        parser.dispose()


def _resolved(value: str, resolvers: list[_Resolver]) -> Any:
    """The value of a plain scalar that may be of an implicit type; :data:`UNUSUAL` for a
    timestamp and for a number a refusal might apply to (the full path decides those)."""
    for pattern, convert in resolvers:
        if pattern.match(value):
            if convert is None or len(value) > MAX_INTEGER_DIGITS or "_" in value:
                return UNUSUAL
            return convert(value)
    return value


def full_load(text: str, *, source: str) -> Any:
    """``text`` through PyYAML's composer and constructor over libyaml's events, each
    event checked by Kura's refusals; every error is an ``InvalidInput`` naming
    ``source``."""
    import yaml as pyyaml

    loader = _loader_class()(text, source)
    try:
        return loader.get_single_data()
    except RecursionError:
        raise too_deep(source) from None
    except pyyaml.YAMLError as exc:
        if "invalid Unicode character" in str(exc):
            raise not_unicode(source, None) from None
        raise not_yaml(source, exc) from None
    finally:
        loader.dispose()


def _checked_event(event: Any, depth: int, source: str) -> int:
    """The nesting depth after ``event``, refusing what :mod:`kura.yamlrules` refuses."""
    import yaml as pyyaml

    if isinstance(event, pyyaml.ScalarEvent):
        numeric = (event.implicit[0] and event.tag is None) or event.tag in NUMBER_TAGS
        check_scalar(event.value, numeric=numeric, source=source, line=event_line(event))
        return depth
    if isinstance(event, pyyaml.AliasEvent):
        raise alias_refused(source, event_line(event))
    if isinstance(event, pyyaml.CollectionStartEvent):
        check_depth(depth, source)
        return depth + 1
    if isinstance(event, pyyaml.CollectionEndEvent):
        return depth - 1
    return depth


def _int_of(text: str) -> int:
    """A YAML 1.2 core-schema integer: decimal (``010`` is ten), or ``0o``, ``0x``, ``0b``
    without a sign, as :data:`_CORE_SCHEMA` matches them; underscores ignored, as the
    round-trip reader has them."""
    text = text.replace("_", "")
    return int(text, 0) if text[:2] in ("0o", "0x", "0b") else int(text)


def _float_of(text: str) -> float:
    """A YAML core-schema float, ``.inf`` and ``.nan`` included."""
    text = text.replace("_", "").lower()
    sign = -1.0 if text.startswith("-") else 1.0
    digits = text.lstrip("+-")
    if digits == ".inf":
        return sign * float("inf")
    if digits == ".nan":
        return float("nan")
    return sign * float(digits)


_CORE_SCHEMA: tuple[tuple[str, str, str | tuple[str, ...], Callable[[str], Any] | None], ...] = (
    ("null", r"^(?:~|null|Null|NULL|)$", ("~", "n", "N", ""), lambda _: None),
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF", lambda t: t.lower() == "true"),
    ("int", r"^(?:[-+]?[0-9_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+)$", "-+0123456789", _int_of),
    (
        "float",
        r"""^(?:[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""",
        "-+0123456789.",
        _float_of,
    ),
    (
        "timestamp",
        r"""^(?:[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}
        (?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?)$""",
        "0123456789",
        None,
    ),
)
"""The implicit types of a plain scalar: YAML 1.2's core schema plus the timestamps and
``0b`` integers the round-trip reader resolves (``no`` and ``on`` are strings, ``010`` is
ten), each with its first characters, its pattern and its conversion (None: the quick path
leaves timestamps to PyYAML's constructor)."""

_Resolver = tuple[re.Pattern[str], Callable[[str], Any] | None]
_RESOLVERS: dict[str, list[_Resolver]] = {}
for _name, _pattern, _firsts, _convert in _CORE_SCHEMA:
    for _first in _firsts:
        _RESOLVERS.setdefault(_first, []).append((re.compile(_pattern, re.X), _convert))


_LOADER: type | None = None


def _loader_class() -> type:
    """PyYAML's composer and safe constructor over libyaml's parser, resolving
    :data:`_CORE_SCHEMA` and refusing duplicate keys (PyYAML keeps the last), built on
    first use (PyYAML is not imported at start-up). The composer is PyYAML's own (Python)
    rather than libyaml's so that each event passes through :meth:`get_event`, where
    Kura's refusals run."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml as pyyaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    parser: Any = _parser_class()

    class Loader(parser, Composer, SafeConstructor, Resolver):  # type: ignore[misc]
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
            self.kura_depth = _checked_event(event, self.kura_depth, self.kura_source)
            return event

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (dict, list)):
                    raise pyyaml.constructor.ConstructorError(
                        None, None, "a mapping or list as a key", key_node.start_mark
                    )
                if key in seen:
                    raise pyyaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
            mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return mapping

    loader: Any = Loader
    loader.add_constructor("tag:yaml.org,2002:map", Loader.construct_yaml_map)
    for name, pattern, firsts, convert in _CORE_SCHEMA:
        tag = f"tag:yaml.org,2002:{name}"
        loader.add_implicit_resolver(tag, re.compile(pattern, re.X), list(firsts))
        if convert is not None and name != "null":
            loader.add_constructor(tag, _constructor(convert))
    _LOADER = Loader
    return Loader


def _constructor(convert: Callable[[str], Any]) -> Callable[[Any, Any], Any]:
    def construct(loader: Any, node: Any) -> Any:
        return convert(str(loader.construct_scalar(node)))

    return construct


def _parser_class() -> type:
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
