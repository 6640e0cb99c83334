"""Baseline card values from the trainer's documentation, shipped with Kura as data
(``kura/data/baselines.yaml``), and their sync into the workspace's cards.

Sync adds missing upstream lines and refreshes upstream lines whose value changed; it never
edits an owner-, run- or agent-sourced line, so a contradiction stays side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, ClassVar

from kura.fsutil import atomic_write_text
from kura.knowledge.cards import (
    KnowledgeCard,
    entry_line,
    insert_entry,
    parse_card,
    read_card,
    replace_line,
)
from kura.spec.base import plain
from kura.workspace import Workspace
from kura.yamlio import parse_yaml

__all__ = [
    "CardSync",
    "KnowledgeSync",
    "baseline_values",
    "card_path",
    "show_card",
    "sync_baselines",
    "sync_cards",
]


@dataclass(frozen=True)
class CardSync:
    architecture: str
    created: bool
    added: int
    updated: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "architecture": self.architecture,
            "created": self.created,
            "added": self.added,
            "updated": self.updated,
        }


@dataclass(frozen=True)
class KnowledgeSync:
    """``kura knowledge sync``: what the sync did to each card, in the order synced."""

    cards: tuple[CardSync, ...]

    kind: ClassVar[str] = "knowledge-sync"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "cards": [card.to_dict() for card in self.cards]}


@cache
def _table() -> dict[str, Any]:
    text = resources.files("kura").joinpath("data/baselines.yaml").read_text(encoding="utf-8")
    data = parse_yaml(text, source="kura/data/baselines.yaml")
    return {str(arch): plain(spec) for arch, spec in data.items()}


def baseline_architectures() -> list[str]:
    return sorted(_table())


def baseline_values(architecture: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """(doc, {section: {key: value}}) for one architecture."""
    spec = _table().get(architecture)
    if spec is None:
        return "", {}
    sections = {k: v for k, v in spec.items() if k != "doc"}
    return str(spec["doc"]), sections


def card_path(workspace: Workspace, architecture: str) -> Any:
    return workspace.knowledge_dir / f"{architecture}.md"


def _new_card(architecture: str) -> str:
    return (
        f"# {architecture} — knowledge card\n\n"
        "Values Kura uses when drafting a run on this architecture. One value per line:\n"
        "`- key: value — source: owner (date) | run <id> | agent (date) | upstream (doc)`.\n"
        "Sections are tasks (`all` applies to every task). Kura never overwrites an owner, run\n"
        "or agent line; contradicting values stay side by side.\n\n## all\n"
    )


def sync_baselines(workspace: Workspace, architectures: list[str] | None = None) -> list[CardSync]:
    """Write or refresh the upstream lines of each architecture's card."""
    results = []
    with workspace.lock():
        for architecture in architectures or baseline_architectures():
            doc, sections = baseline_values(architecture)
            path = card_path(workspace, architecture)
            text = read_card(path)
            created = not text
            if created:
                text = _new_card(architecture)
            added = updated = 0
            for section, values in sections.items():
                for key, value in values.items():
                    entries, _ = parse_card(text)
                    upstream = [
                        e
                        for e in entries
                        if e.section == section and e.key == key and e.kind == "upstream"
                    ]
                    line = entry_line(key, value, f"upstream ({doc})")
                    if not upstream:
                        text = insert_entry(text, section, line)
                        added += 1
                    elif upstream[0].value != value:
                        text = replace_line(text, upstream[0].line_index, line)
                        updated += 1
            if created or added or updated:
                atomic_write_text(path, text)
            results.append(CardSync(architecture, created, added, updated))
    return results


def sync_cards(workspace: Workspace, architectures: list[str] | None = None) -> KnowledgeSync:
    """:func:`sync_baselines` as ``kura knowledge sync`` reports it."""
    return KnowledgeSync(tuple(sync_baselines(workspace, architectures)))


def show_card(workspace: Workspace, architecture: str) -> KnowledgeCard:
    """The workspace's card for ``architecture``, parsed (``kura knowledge show``)."""
    path = card_path(workspace, architecture)
    entries, problems = parse_card(read_card(path))
    return KnowledgeCard(architecture, str(path), tuple(entries), tuple(problems))
