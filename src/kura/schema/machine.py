"""Reading and writing the JSON files Kura alone writes (steps, container, launch, state,
inspection): one pydantic model each, validated on the way in and on the way out.

These files are read often and never edited by people, so they are parsed with the JSON
parser (bounded, :mod:`kura.bounded`), never the round-trip YAML one. A file that does not
match its model is :class:`~kura.errors.InvalidInput` naming the file, the key and the way
back (usually: write it again with the command that made it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from kura.errors import InvalidInput
from kura.fsutil import atomic_write_text

__all__ = ["MachineFile", "parse_machine_text", "read_machine_file", "write_machine_file"]

M = TypeVar("M")
"""A file's model: a :class:`MachineFile`, or a pydantic dataclass (``compiled/container.json``
is a :class:`kura.schema.compiled.ContainerSpec`)."""


class MachineFile(BaseModel):
    """Base of every machine-written file's model: unknown keys are errors, and values are
    not coerced (a hand edit that turns a number into a string is caught)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def read_machine_file(model: type[M], path: Path, *, remedy: str) -> M:
    """``path`` as ``model``; damage or a hand edit names the key and ``remedy``."""
    return parse_machine_text(model, _read_text(path), path, remedy=remedy)


def _read_text(path: Path) -> str:
    from kura.bounded import MAX_CONFIG_BYTES, decode_utf8, read_limited

    return decode_utf8(read_limited(path, limit=MAX_CONFIG_BYTES, what="JSON file"), path)


def parse_machine_text(model: type[M], text: str, path: Path, *, remedy: str) -> M:
    """``text`` (the bytes of ``path`` already read) as ``model``, refused like
    :func:`read_machine_file` refuses the file."""
    from kura.bounded import parse_json
    from kura.schema.base import describe_validation

    data = parse_json(text, path)
    try:
        return _validated(model, data)
    except ValidationError as exc:
        raise InvalidInput(
            f"{path} does not match the {model.__name__} schema: {describe_validation(exc)}",
            hint=f"Kura alone writes this file; {remedy}",
            path=path,
        ) from None


def _validated(model: type[M], data: object) -> M:
    if issubclass(model, BaseModel):
        return model.model_validate(data)
    adapter = _ADAPTERS.get(model)
    if adapter is None:
        adapter = _ADAPTERS[model] = TypeAdapter(model)
    found: M = adapter.validate_python(data)
    return found


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}
"""One adapter per dataclass model (building one costs a schema)."""


def write_machine_file(path: Path, document: object) -> str:
    """Write ``document`` atomically as sorted, indented JSON; returns the text written."""
    text = machine_text(document)
    atomic_write_text(path, text)
    return text


def machine_text(document: object) -> str:
    """The canonical bytes of a machine file (compiling twice gives the same text)."""
    data: Any = (
        document.model_dump(mode="json", by_alias=True)
        if isinstance(document, BaseModel)
        else to_jsonable_python(document, by_alias=True)
    )
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
