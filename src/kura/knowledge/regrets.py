"""Regrets: ``knowledge/regrets.md``, one ``- trigger -> reminder`` line per lesson.

The last look before approval shows the reminders whose trigger words all appear in the
run's context (architecture, task, bundle, optimizer, flags). It never changes a plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from kura.errors import UsageError
from kura.fsutil import atomic_write_text
from kura.knowledge.cards import read_card
from kura.workspace import Workspace

__all__ = [
    "Regret",
    "RegretRecorded",
    "append_regret",
    "matching_regrets",
    "read_regrets",
    "record_regret",
]

_LINE_RE = re.compile(
    r"^\s*[-*]\s+(?P<trigger>.+?)\s*->\s*(?P<reminder>.+?)"
    r"(?:\s+\(source:\s*(?P<source>.*)\))?\s*$"
)
_HEADER = "# Regrets\n\nOne lesson per line: `- trigger words -> reminder`.\n\n"


@dataclass(frozen=True)
class Regret:
    trigger: str
    reminder: str
    source: str = ""

    @property
    def words(self) -> frozenset[str]:
        return frozenset(w for w in re.split(r"[\s,]+", self.trigger.lower()) if w)

    def to_dict(self) -> dict[str, Any]:
        return {"trigger": self.trigger, "reminder": self.reminder, "source": self.source}


@dataclass(frozen=True)
class RegretRecorded:
    """``kura knowledge regret``: the lesson appended, citing ``run``."""

    run: str
    regret: Regret

    kind: ClassVar[str] = "knowledge-regret"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "run": self.run, **self.regret.to_dict()}


def regrets_path(workspace: Workspace) -> Any:
    return workspace.knowledge_dir / "regrets.md"


def read_regrets(workspace: Workspace) -> list[Regret]:
    text = read_card(regrets_path(workspace))
    out = []
    for line in text.splitlines():
        match = _LINE_RE.match(line)
        if match:
            out.append(
                Regret(match.group("trigger"), match.group("reminder"), match.group("source") or "")
            )
    return out


def matching_regrets(regrets: list[Regret], context: set[str], limit: int = 5) -> list[Regret]:
    """Regrets whose every trigger word is in ``context`` (lower-cased words)."""
    words = {w.lower() for w in context}
    return [r for r in regrets if r.words and r.words <= words][:limit]


def append_regret(workspace: Workspace, line: str, *, source: str) -> Regret:
    """Append ``trigger -> reminder`` (validated) with its source."""
    match = _LINE_RE.match(f"- {line.strip()}")
    if not match or "\n" in line:
        raise UsageError(
            f"{line!r} is not `trigger -> reminder`",
            hint='e.g. kura knowledge regret RUN "flux2 fp8 -> check skin texture at epoch 4"',
        )
    regret = Regret(match.group("trigger"), match.group("reminder"), source)
    with workspace.lock():
        path = regrets_path(workspace)
        text = read_card(path) or _HEADER
        if not text.endswith("\n"):
            text += "\n"
        text += f"- {regret.trigger} -> {regret.reminder} (source: {source})\n"
        atomic_write_text(path, text)
    return regret


def record_regret(workspace: Workspace, run_id: str, line: str) -> RegretRecorded:
    """Append ``line`` citing ``run <run_id>`` (the caller has checked that the run exists:
    the knowledge layer does not read runs)."""
    return RegretRecorded(run_id, append_regret(workspace, line, source=f"run {run_id}"))
