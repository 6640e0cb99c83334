"""Drafting recipe values: each from the first source that covers it, with that source.

Order: an explicit instruction (``--set``) → the owner's preferences
(``knowledge/user-preferences.md``) → the run's trainer's card (its owner lines → run
lines → sweep lines (a sweep's promoted winner) → agent lines → upstream baseline) → that
trainer's own default (``Backend.knowledge``). Within one card, the task's section outranks
``all``. Only the run's trainer's card and defaults are read: a value another trainer has
is never drafted. A key that two sources at the same rank disagree on keeps both: the first
wins and the other is reported as a contradiction, never dropped silently.

Preferences are the owner's own words, under sections named (first found wins)
``<backend> × <architecture> × <task>``, ``<backend> × <architecture>``,
``<architecture> × <task>``, ``<architecture>``, ``<backend>``, ``all``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kura.errors import SpecError
from kura.knowledge.baselines import card_path
from kura.knowledge.cards import CardEntry, parse_card, read_card
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.backends.base import KnownValue

__all__ = ["Decision", "draft_values", "preferences_path", "provenance_line"]

_CARD_ORDER = ("owner", "run", "sweep", "agent", "upstream")
_ORIGIN_LABEL = {
    "explicit": "your instruction",
    "preference": "your preference",
    "owner": "card, owner",
    "run": "card, from run",
    "sweep": "card, from sweep",
    "agent": "card, agent",
    "upstream": "card baseline",
}


@dataclass(frozen=True)
class Decision:
    key: str
    value: Any
    origin: str
    source: str
    section: str = ""
    contradictions: list[dict[str, Any]] = field(default_factory=list)
    backend: str = ""

    def label(self, architecture: str) -> str:
        if self.origin == "default":
            return f"{self.backend} default"
        base = _ORIGIN_LABEL[self.origin]
        if self.origin in _CARD_ORDER:
            where = f"{self.backend} {architecture} × {self.section}"
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


def _preferences(
    workspace: Workspace, backend: str, architecture: str, task: str | None
) -> list[CardEntry]:
    entries, _ = parse_card(read_card(preferences_path(workspace)), default_kind="owner")
    wanted = [
        f"{backend} × {architecture} × {task}" if task else None,
        f"{backend} × {architecture}",
        f"{architecture} × {task}" if task else None,
        architecture,
        backend,
        "all",
    ]
    ranked: list[CardEntry] = []
    for section in wanted:
        ranked += [e for e in entries if section is not None and e.section == section.lower()]
    return ranked


def _card_entries(
    workspace: Workspace, backend: str, architecture: str, task: str | None
) -> list[CardEntry]:
    entries, _ = parse_card(read_card(card_path(workspace, backend, architecture)))
    sections = [s for s in (task, "all") if s]
    ranked: list[CardEntry] = []
    for kind in _CARD_ORDER:
        for section in sections:
            ranked += [e for e in entries if e.kind == kind and e.section == section]
    return ranked


def draft_values(
    workspace: Workspace,
    backend: str,
    architecture: str,
    task: str | None,
    *,
    keys: list[str],
    explicit: dict[str, Any],
    defaults: Mapping[str, KnownValue],
) -> dict[str, Decision]:
    """Decide each of ``keys`` (run.yaml paths) for a run of ``backend``, recording where
    each value came from; ``defaults`` are the backend's own (``Backend.knowledge``)."""
    preferences = _preferences(workspace, backend, architecture, task)
    card = _card_entries(workspace, backend, architecture, task)
    decisions: dict[str, Decision] = {}
    for key in keys:
        if key in explicit:
            decisions[key] = Decision(key, explicit[key], "explicit", "--set", backend=backend)
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
                key, chosen.value, origin, chosen.source, chosen.section, others, backend
            )
            continue
        known = defaults.get(key)
        if known is None:
            raise SpecError(
                f"{backend} gives no default for {key}",
                hint=f"its knowledge (Backend.knowledge) must name every recipe key; add {key}",
            )
        decisions[key] = Decision(key, known.value, "default", known.source, backend=backend)
    return decisions


def provenance_line(decisions: dict[str, Decision], architecture: str) -> str:
    """``learning_rate: your preference · network.rank: card baseline (musubi-tuner flux2 ×
    all) · …``"""
    parts = []
    for key, decision in decisions.items():
        short = key.removeprefix("training.")
        parts.append(f"{short}: {decision.label(architecture)}")
    return " · ".join(parts)
