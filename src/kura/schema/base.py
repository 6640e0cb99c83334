"""Loading, validating and editing spec files.

Specs are pydantic models with ``extra="forbid"``: an unknown key is an error that names the
key and the file. Edits go through the round-trip YAML document so comments and key order
survive, and the edited document is validated before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from kura.errors import SpecError, UsageError
from kura.plainyaml import read_yaml

__all__ = [
    "StrictModel",
    "describe_validation",
    "load_spec",
    "parse_value",
    "plain",
    "read_spec",
    "set_dotted",
    "validate_spec",
]

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every spec model: unknown keys are errors, assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def validate_spec(model: type[M], data: Any, *, source: Path | str) -> M:
    """Validate plain data against ``model``; a failure names each bad key and the file."""
    try:
        return model.model_validate(plain(data))
    except ValidationError as exc:
        raise SpecError(
            f"{source} does not match the {model.__name__} schema: {describe_validation(exc)}",
            hint=f"fix the key(s) named above in {source}; `kura schema` prints the schema",
            path=source,
        ) from None


def load_spec(model: type[M], path: Path) -> tuple[M, Any]:
    """Read a spec file; return the validated model and the round-trip document."""
    from kura.yamlio import load_yaml  # the round-trip parser: only a writer needs it

    document = load_yaml(path)
    return validate_spec(model, document, source=path), document


def read_spec(model: type[M], path: Path) -> M:
    """Read a spec file that will not be written back (libyaml; no round-trip document)."""
    return validate_spec(model, read_yaml(path), source=path)


def set_dotted(document: Any, dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in a round-trip document, creating intermediate mappings.

    A list item is addressed by its index, ``datasets.0.repeats`` or ``datasets[0].repeats``
    (the first is how validation errors name it); an index names an existing item only, so a
    typo never grows a list.
    """
    parts = _dotted_parts(dotted)
    node = document
    for part in parts[:-1]:
        node = _descend(node, part, dotted)
    _assign(node, parts[-1], value, dotted)


def _dotted_parts(dotted: str) -> list[str | int]:
    parts: list[str | int] = []
    for raw in dotted.replace("[", ".").replace("]", "").split("."):
        if raw:
            parts.append(int(raw) if raw.isdigit() else raw)
    if not parts:
        raise UsageError(f"empty key in {dotted!r}", hint="use the form section.key=value")
    return parts


def _descend(node: Any, part: str | int, dotted: str) -> Any:
    if isinstance(part, int):
        child = _list_item(node, part, dotted)
    elif isinstance(node, dict):
        child = node.get(part)
        if child is None:
            child = {}
            node[part] = child
    else:
        raise UsageError(
            f"cannot set {dotted}: {part} is inside a list",
            hint="name the item by its index first, e.g. datasets.0.repeats=2",
        )
    if not isinstance(child, (dict, list)):
        raise UsageError(
            f"cannot set {dotted}: {part} holds a value, not a section",
            hint="name a key inside a section, e.g. intent.task=style",
        )
    return child


def _assign(node: Any, part: str | int, value: Any, dotted: str) -> None:
    if isinstance(part, int):
        _list_item(node, part, dotted)
        node[part] = value
    elif isinstance(node, dict):
        node[part] = value
    else:
        raise UsageError(
            f"cannot set {dotted}: {part} is inside a list",
            hint="name the item by its index first, e.g. datasets.0.repeats=2",
        )


def _list_item(node: Any, index: int, dotted: str) -> Any:
    if not isinstance(node, list):
        raise UsageError(
            f"cannot set {dotted}: {index} indexes a section, not a list",
            hint="use an index only after a list key, e.g. datasets.0.repeats=2",
        )
    if index >= len(node):
        raise UsageError(
            f"cannot set {dotted}: the list has {len(node)} item(s), numbered from 0",
            hint=f"use an index from 0 to {len(node) - 1}" if node else "add the item first",
        )
    return node[index]


def parse_value(raw: str) -> Any:
    """Read the right-hand side of ``key=value`` as a YAML scalar or flow value."""
    if raw == "":
        return None
    from kura.yamlio import parse_yaml

    parsed = parse_yaml(f"v: {raw}", source="--set value").get("v")
    return plain(parsed)


def plain(data: Any) -> Any:
    """Round-trip containers and scalars to plain Python types (dict, list, int, float, str)."""
    if type(data) in _PLAIN_SCALARS:  # most of a document, and already plain
        return data
    if isinstance(data, dict):
        return {str(k): plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [plain(v) for v in data]
    if isinstance(data, bool) or data is None:
        return data
    for kind in (int, float, str):
        if isinstance(data, kind):
            return kind(data)
    return data


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})


def describe_validation(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:6]:
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        if error["type"] == "extra_forbidden":
            parts.append(f"unknown key `{where}`")
        elif error["type"] == "missing":
            parts.append(f"missing key `{where}`")
        else:
            parts.append(f"`{where}`: {error['msg']}")
    more = len(exc.errors()) - 6
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)
