"""Knowledge cards: ``knowledge/<backend>/<architecture>.md``, Markdown a person can read
and edit (one card per trainer and architecture).

A card has task sections (``## all``, ``## character``, ``## style``, ``## concept``,
``## paired-edit``, ``## video``); each value is one line::

    - training.learning_rate: 0.0001 — source: upstream (musubi-tuner 0.3.4 docs/flux_2.md:170)

Lines Kura does not recognise are kept as they are. Kura edits a card by inserting or
replacing single lines, so a person's notes, order and wording survive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from kura.errors import InvalidInput

__all__ = [
    "SECTIONS",
    "SOURCE_KINDS",
    "CardEntry",
    "KnowledgeCard",
    "entry_line",
    "insert_entry",
    "parse_card",
    "read_card",
    "replace_line",
]

SECTIONS = ("all", "character", "style", "concept", "paired-edit", "video")
SOURCE_KINDS = ("owner", "run", "sweep", "agent", "upstream")

_HEADER_RE = re.compile(r"^##\s+(?P<name>\S.*?)\s*$")
_ENTRY_RE = re.compile(
    r"^\s*[-*]\s+`?(?P<key>[A-Za-z_][\w.]*)`?\s*:\s*(?P<value>.*?)"
    r"(?:\s+(?:—|--)\s+source:\s*(?P<source>.+?))?\s*$"
)
_MAX_CARD_BYTES = 1024 * 1024


@dataclass(frozen=True)
class CardEntry:
    """One value line: where it is, what it says, and who said it."""

    section: str
    key: str
    value: Any
    source: str
    kind: str
    line_index: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "key": self.key,
            "value": self.value,
            "source": self.source,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class KnowledgeCard:
    """``kura knowledge show``: one trainer's card of one architecture at ``path``, its value
    lines in file order, and the lines that lack a (known) source."""

    architecture: str
    path: str
    entries: tuple[CardEntry, ...]
    problems: tuple[str, ...]
    backend: str = ""

    kind: ClassVar[str] = "knowledge-card"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "backend": self.backend,
            "architecture": self.architecture,
            "path": self.path,
            "entries": [entry.to_dict() for entry in self.entries],
            "problems": list(self.problems),
        }


def source_kind(source: str) -> str | None:
    """``upstream (docs/x.md)`` → ``upstream``; ``run 20261130-1042`` → ``run``;
    ``sweep sw-20261201-0900`` → ``sweep``."""
    word = source.strip().split(" ", 1)[0].split("(", 1)[0].lower()
    return word if word in SOURCE_KINDS else None


def parse_value(raw: str) -> Any:
    from kura.schema.base import parse_value as parse_yaml_value

    try:
        return parse_yaml_value(raw)
    except InvalidInput:
        return raw


def parse_card(text: str, *, default_kind: str | None = None) -> tuple[list[CardEntry], list[str]]:
    """Entries and problems (value lines with no or an unknown source).

    ``default_kind`` is used for lines without a source (the preferences file is the owner's
    own words, so its lines default to ``owner``); cards require a source on every value.
    """
    entries: list[CardEntry] = []
    problems: list[str] = []
    section = "all"
    for index, line in enumerate(text.splitlines()):
        header = _HEADER_RE.match(line)
        if header:
            section = header.group("name").strip().lower()
            continue
        match = _ENTRY_RE.match(line)
        if not match:
            continue
        source = (match.group("source") or "").strip()
        kind = source_kind(source) if source else default_kind
        if kind is None:
            problems.append(
                f"line {index + 1}: `{match.group('key')}` has "
                + ("no source" if not source else f"an unknown source {source!r}")
                + f"; end the line with ` — source: owner ({'YYYY-MM-DD'})` or similar"
            )
            continue
        entries.append(
            CardEntry(
                section=section,
                key=match.group("key"),
                value=parse_value(match.group("value")),
                source=source or kind,
                kind=kind,
                line_index=index,
            )
        )
    return entries, problems


def read_card(path: Path) -> str:
    """A card's text ('' when absent); refuses files too large or not UTF-8."""
    if not path.exists():
        return ""
    if path.stat().st_size > _MAX_CARD_BYTES:
        raise InvalidInput(f"{path} is larger than 1 MiB", hint="split or trim the card", path=path)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(
            f"{path} is not UTF-8 text", hint="save it as UTF-8", path=path
        ) from None


def entry_line(key: str, value: Any, source: str) -> str:
    return f"- {key}: {_format_value(value)} — source: {source}"


def _format_value(value: Any) -> str:
    """One-line YAML: flow style (JSON) for lists and mappings, plain scalars otherwise."""
    import json

    from kura.yamlio import dump_yaml

    if value is None:
        return "null"  # an empty value would leave the line's source unparsed
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    text = dump_yaml({"v": value}).strip()
    text = text[2:].strip() if text.startswith("v:") else text
    return " ".join(text.split())


def insert_entry(text: str, section: str, line: str) -> str:
    """Insert ``line`` at the end of ``## section`` (created at the end when missing)."""
    lines = text.splitlines()
    start = next(
        (
            i
            for i, item in enumerate(lines)
            if (m := _HEADER_RE.match(item)) and m.group("name").strip().lower() == section
        ),
        None,
    )
    if start is None:
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ["", f"## {section}", line]
        return "\n".join(lines) + "\n"
    end = start + 1
    while end < len(lines) and not _HEADER_RE.match(lines[end]):
        end += 1
    position = end
    while position > start + 1 and not lines[position - 1].strip():
        position -= 1
    lines.insert(position, line)
    return "\n".join(lines) + "\n"


def replace_line(text: str, index: int, line: str) -> str:
    lines = text.splitlines()
    lines[index] = line
    return "\n".join(lines) + "\n"
