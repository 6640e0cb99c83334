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
from kura.yamlio import load_yaml, parse_yaml, read_yaml

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
    document = load_yaml(path)
    return validate_spec(model, document, source=path), document


def read_spec(model: type[M], path: Path) -> M:
    """Read a spec file that will not be written back (libyaml; no round-trip document)."""
    return validate_spec(model, read_yaml(path), source=path)


def set_dotted(document: Any, dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in a round-trip mapping, creating intermediate mappings."""
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        raise UsageError(f"empty key in {dotted!r}", hint="use the form section.key=value")
    node = document
    for part in parts[:-1]:
        child = node.get(part) if isinstance(node, dict) else None
        if child is None:
            child = {}
            node[part] = child
        if not isinstance(child, dict):
            raise UsageError(
                f"cannot set {dotted}: {part} holds a value, not a section",
                hint="name a key inside a section, e.g. intent.task=style",
            )
        node = child
    node[parts[-1]] = value


def parse_value(raw: str) -> Any:
    """Read the right-hand side of ``key=value`` as a YAML scalar or flow value."""
    if raw == "":
        return None
    parsed = parse_yaml(f"v: {raw}", source="--set value").get("v")
    return plain(parsed)


def plain(data: Any) -> Any:
    """Round-trip containers and scalars to plain Python types (dict, list, int, float, str)."""
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
