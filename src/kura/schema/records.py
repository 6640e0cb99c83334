"""Reading and writing Kura's own JSON records (approval.json, plan.json, compiled/run.lock).

Each record has one model, one writer (:func:`write_record`, canonical JSON written
atomically) and one reader (:func:`read_record`, bounded parse then schema check). A damaged
or hand-edited record gets the same clear error as run.yaml: the file, the key, the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from kura.bounded import load_json
from kura.errors import InvalidInput
from kura.fsutil import atomic_write_text
from kura.schema.base import validate_spec

__all__ = ["canonical_json", "read_record", "record_text", "write_record"]

M = TypeVar("M", bound=BaseModel)


def canonical_json(data: object) -> str:
    """Sorted keys, two-space indent, trailing newline: equal data gives equal bytes."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def record_text(record: BaseModel) -> str:
    return canonical_json(record.model_dump(mode="json"))


def write_record(path: Path, record: BaseModel) -> str:
    """Write ``record`` atomically; returns the text written."""
    text = record_text(record)
    atomic_write_text(path, text)
    return text


def parse_record(model: type[M], raw: bytes, path: Path, *, fix: str) -> M:
    """:func:`read_record` of bytes already read from ``path`` (a caller that also hashes
    the file reads it once)."""
    from kura.bounded import decode_utf8, parse_json

    try:
        return validate_spec(model, parse_json(decode_utf8(raw, path), path), source=path)
    except InvalidInput as exc:
        raise type(exc)(exc.message, hint=fix, path=path) from None


def read_record(model: type[M], path: Path, *, fix: str) -> M:
    """Parse ``path`` within the JSON bounds and validate it against ``model``.

    Damage is InvalidInput (SpecError for a schema mismatch) naming the file and the key;
    ``fix`` is the hint, because Kura alone writes these files and the way back is the
    command that writes it again, not an edit."""
    try:
        return validate_spec(model, load_json(path), source=path)
    except InvalidInput as exc:
        raise type(exc)(exc.message, hint=fix, path=path) from None
