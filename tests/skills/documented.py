"""The `kura …` commands a document gives, read from its fenced shell blocks.

A fenced block with no language or a shell one (``bash``, ``sh``, ``shell``, ``console``) is
read as shell: backslash continuations are joined, ``#`` comments dropped, each line split
with :mod:`shlex` and cut at ``&&``, ``||``, ``;`` and ``|``. A piece whose first word is
``kura`` (or a path ending in ``/kura``) is a Kura command; ``cd DIR`` moves the folder the
next commands run in. YAML, TOML and other blocks are not commands.

Placeholders follow ``src/kura/data/skills/README.md``: an UPPER_CASE word (letters,
digits, ``_``) that stands alone or follows ``=`` or ``/``, not joined to another word by
``-``; one after a dot (a KohakuMoss knob such as ``backend.config.SAVE_EVERY``) is a
name, not a placeholder.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PLACEHOLDER",
    "DocCommand",
    "fenced_blocks",
    "fill",
    "placeholders_in",
    "shell_commands",
    "yaml_blocks",
]

_FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")
_SHELL = frozenset({"", "bash", "sh", "shell", "console"})
_SEPARATORS = frozenset({"&&", "||", ";", "|"})
PLACEHOLDER = re.compile(r"(?<![\w.-])[A-Z][A-Z0-9_]*[A-Z0-9](?![\w-])")
"""An UPPER_CASE word not joined to letters, digits, ``_`` or ``-``, nor after a ``.``."""


@dataclass(frozen=True)
class DocCommand:
    """One shell command of a document: ``words`` as written, and where it stands."""

    source: str
    line: int
    words: tuple[str, ...]

    @property
    def is_kura(self) -> bool:
        return bool(self.words) and (self.words[0] == "kura" or self.words[0].endswith("/kura"))

    @property
    def is_cd(self) -> bool:
        return len(self.words) == 2 and self.words[0] == "cd"

    @property
    def argv(self) -> tuple[str, ...]:
        """The words after ``kura``."""
        return self.words[1:]

    def where(self) -> str:
        return f"{self.source}:{self.line}: {shlex.join(self.words)}"


def fenced_blocks(text: str) -> Iterator[tuple[str, int, list[str]]]:
    """Each fenced block: its language, the line number of its first line, its lines."""
    language: str | None = None
    start, lines = 0, []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line.strip())
        if language is None and match:
            language, start, lines = match.group(1).lower(), number + 1, []
        elif language is not None and line.strip() == "```":
            yield language, start, lines
            language = None
        elif language is not None:
            lines.append(line)


def yaml_blocks(text: str) -> list[str]:
    return ["\n".join(lines) + "\n" for lang, _, lines in fenced_blocks(text) if lang == "yaml"]


def _logical_lines(start: int, lines: list[str]) -> Iterator[tuple[int, str]]:
    pending, first = "", start
    for offset, line in enumerate(lines):
        if not pending:
            first = start + offset
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        yield first, pending + stripped
        pending = ""
    if pending:
        yield first, pending


def shell_commands(text: str, source: str) -> list[DocCommand]:
    """Every command of the document's shell blocks, in order."""
    found = []
    for language, start, lines in fenced_blocks(text):
        if language not in _SHELL:
            continue
        for number, line in _logical_lines(start, lines):
            words: list[str] = []
            for word in [*shlex.split(line, comments=True), ";"]:
                if word in _SEPARATORS:
                    if words:
                        found.append(DocCommand(source, number, tuple(words)))
                    words = []
                else:
                    words.append(word)
    return found


def placeholders_in(word: str) -> list[str]:
    return PLACEHOLDER.findall(word)


def fill(word: str, values: Mapping[str, str]) -> str:
    """``word`` with every placeholder replaced; an unknown one raises KeyError."""
    return PLACEHOLDER.sub(lambda m: values[m.group(0)], word)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")
