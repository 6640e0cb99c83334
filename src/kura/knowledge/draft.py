"""Drafting recipe values: each from the first source that covers it, with that source.

Order: an explicit instruction (``--set``) → the owner's preferences
(``knowledge/user-preferences.md``) → the card's owner lines → its run lines → its sweep
lines (a sweep's promoted winner) → its agent
lines → its upstream baseline → Kura's own default. Within one card, the task's section
outranks ``all``. A key that two sources at the same rank disagree on keeps both: the first
wins and the other is reported as a contradiction, never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from kura.errors import SpecError
from kura.knowledge.baselines import card_path
from kura.knowledge.cards import CardEntry, parse_card, read_card
from kura.workspace import Workspace
from kura.yamlio import parse_yaml

__all__ = ["Decision", "default_sources", "draft_values", "provenance_line"]

_DEFAULTS_FILE = "data/recipe_defaults.yaml"


@cache
def default_sources() -> dict[str, str]:
    """run.yaml path → the source of Kura's own default (``kura/data/recipe_defaults.yaml``)."""
    text = resources.files("kura").joinpath(_DEFAULTS_FILE).read_text(encoding="utf-8")
    data = parse_yaml(text, source=f"kura/{_DEFAULTS_FILE}")
    return {str(key): " ".join(str(value).split()) for key, value in data.items()}


_CARD_ORDER = ("owner", "run", "sweep", "agent", "upstream")
_ORIGIN_LABEL = {
    "explicit": "your instruction",
    "preference": "your preference",
    "owner": "card, owner",
    "run": "card, from run",
    "sweep": "card, from sweep",
    "agent": "card, agent",
    "upstream": "card baseline",
    "default": "Kura default",
}


@dataclass(frozen=True)
class Decision:
    key: str
    value: Any
    origin: str
    source: str
    section: str = ""
    contradictions: list[dict[str, Any]] = field(default_factory=list)

    def label(self, architecture: str) -> str:
        base = _ORIGIN_LABEL[self.origin]
        if self.origin in _CARD_ORDER:
            where = f"{architecture} × {self.section}"
            detail = self.source if self.origin in ("run", "sweep") else where
            return f"{base} ({detail})"
        return base

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "origin": self.origin,
            "source": self.source,
            "section": self.section,
            "contradictions": self.contradictions,
        }


def preferences_path(workspace: Workspace) -> Any:
    return workspace.knowledge_dir / "user-preferences.md"


def _preferences(workspace: Workspace, architecture: str, task: str | None) -> list[CardEntry]:
    entries, _ = parse_card(read_card(preferences_path(workspace)), default_kind="owner")
    wanted = [f"{architecture} × {task}" if task else None, architecture, "all"]
    ranked: list[CardEntry] = []
    for section in wanted:
        ranked += [e for e in entries if section is not None and e.section == section]
    return ranked


def _card_entries(workspace: Workspace, architecture: str, task: str | None) -> list[CardEntry]:
    entries, _ = parse_card(read_card(card_path(workspace, architecture)))
    sections = [s for s in (task, "all") if s]
    ranked: list[CardEntry] = []
    for kind in _CARD_ORDER:
        for section in sections:
            ranked += [e for e in entries if e.kind == kind and e.section == section]
    return ranked


def draft_values(
    workspace: Workspace,
    architecture: str,
    task: str | None,
    *,
    keys: list[str],
    explicit: dict[str, Any],
    defaults: dict[str, Any],
) -> dict[str, Decision]:
    """Decide each of ``keys`` (run.yaml paths), recording where each value came from."""
    preferences = _preferences(workspace, architecture, task)
    card = _card_entries(workspace, architecture, task)
    decisions: dict[str, Decision] = {}
    for key in keys:
        if key in explicit:
            decisions[key] = Decision(key, explicit[key], "explicit", "--set")
            continue
        candidates = [("preference", e) for e in preferences if e.key == key]
        candidates += [(e.kind, e) for e in card if e.key == key]
        if candidates:
            origin, chosen = candidates[0]
            others = [
                {"value": e.value, "source": e.source, "section": e.section}
                for o, e in candidates[1:]
                if o == origin and e.value != chosen.value
            ]
            decisions[key] = Decision(
                key, chosen.value, origin, chosen.source, chosen.section, others
            )
        elif key in defaults:
            source = default_sources().get(key)
            if not source:
                raise SpecError(
                    f"kura/{_DEFAULTS_FILE} gives no source for Kura's default of {key}",
                    hint=f"add `{key}: <where the default comes from>` to kura/{_DEFAULTS_FILE}",
                )
            decisions[key] = Decision(key, defaults[key], "default", f"kura: {source}")
    return decisions


def provenance_line(decisions: dict[str, Decision], architecture: str) -> str:
    """``learning_rate: your preference · network.rank: card baseline (flux2 × all) · …``"""
    parts = []
    for key, decision in decisions.items():
        short = key.removeprefix("training.")
        parts.append(f"{short}: {decision.label(architecture)}")
    return " · ".join(parts)
