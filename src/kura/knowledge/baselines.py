"""Knowledge cards per trainer: ``knowledge/<backend>/<architecture>.md``, their baseline
(upstream) lines from the trainer's own docs, examples and code, and their sync.

Each backend says what its trainer documents (``Backend.knowledge``: the card's upstream
values per section, each with its source in that trainer's files). Sync adds missing upstream
lines and refreshes upstream lines whose value or source changed; it never edits an owner-,
run-, sweep- or agent-sourced line, so a contradiction stays side by side.

Cards of the old layout (``knowledge/<architecture>.md``, one card shared by every trainer,
its baselines Musubi's) are refused with the way to move them: their upstream lines spoke
one trainer's flags to every trainer, and Kura cannot tell which trainer a person's own lines
were meant for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from kura.errors import InvalidInput, UsageError
from kura.fsutil import atomic_write_text
from kura.knowledge.cards import (
    KnowledgeCard,
    entry_line,
    insert_entry,
    parse_card,
    read_card,
    replace_line,
)
from kura.workspace import Workspace

__all__ = [
    "CardSync",
    "KnowledgeSync",
    "baseline_values",
    "card_pairs",
    "card_path",
    "old_layout_cards",
    "require_current_layout",
    "show_card",
    "sync_baselines",
    "sync_cards",
]


@dataclass(frozen=True)
class CardSync:
    backend: str
    architecture: str
    created: bool
    added: int
    updated: int

    @property
    def card(self) -> str:
        """The card's path relative to the workspace."""
        return f"knowledge/{self.backend}/{self.architecture}.md"

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "architecture": self.architecture,
            "card": self.card,
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


_NOT_CARDS = ("user-preferences.md", "regrets.md")


def old_layout_cards(workspace: Workspace) -> list[Path]:
    """Cards of the old layout: ``knowledge/<architecture>.md`` directly in the folder."""
    from kura.architectures import ARCHITECTURE_IDS

    folder = workspace.knowledge_dir
    if not folder.is_dir():
        return []
    return sorted(
        path
        for path in folder.glob("*.md")
        if path.name not in _NOT_CARDS and path.stem in ARCHITECTURE_IDS and path.is_file()
    )


def require_current_layout(workspace: Workspace) -> None:
    """Refuse a workspace that still has old-layout cards (InvalidInput naming each one and
    the move that keeps its own lines)."""
    old = old_layout_cards(workspace)
    if not old:
        return
    first = old[0]
    entries, _ = parse_card(read_card(first))
    own = [e for e in entries if e.kind != "upstream"]
    listed = ", ".join(workspace.relative(p) for p in old)
    raise InvalidInput(
        f"{listed}: knowledge cards of the old layout (one card per architecture, shared by "
        "every trainer); cards are now per trainer, knowledge/<backend>/<architecture>.md, "
        "and a run drafts only from its own trainer's card",
        hint=(
            f"move each file to knowledge/<backend>/ for the trainer its lines are about, e.g. "
            f"`mkdir -p knowledge/musubi-tuner && mv {workspace.relative(first)} "
            f"knowledge/musubi-tuner/{first.name}` (the old baselines were Musubi's; "
            f"{first.name} has {len(own)} line(s) of your own or your runs), or delete the ones "
            "with upstream lines only; then `kura knowledge sync` writes every trainer's cards"
        ),
        path=first,
    )


def card_path(workspace: Workspace, backend: str, architecture: str) -> Path:
    """``knowledge/<backend>/<architecture>.md`` (refusing an old-layout workspace)."""
    require_current_layout(workspace)
    if (
        "/" in backend
        or "/" in architecture
        or backend.startswith(".")
        or architecture.startswith(".")
    ):
        raise UsageError(f"not a card name: {backend}/{architecture}", hint="kura model bundles")
    return workspace.knowledge_dir / backend / f"{architecture}.md"


def card_pairs(architectures: list[str] | None = None) -> list[tuple[str, str]]:
    """(backend, architecture) of every card: each registered backend × each architecture
    it trains (those in ``architectures`` only, in that order, when given)."""
    from kura.architectures import ARCHITECTURE_IDS
    from kura.backends.registry import backend_names, get_backend

    unknown = [a for a in architectures or () if a not in ARCHITECTURE_IDS]
    if unknown:
        raise UsageError(
            f"unknown architecture(s): {', '.join(unknown)}",
            hint=f"known: {', '.join(ARCHITECTURE_IDS)}",
        )
    pairs = []
    for name in backend_names():
        backend = get_backend(name)
        pairs += [(name, a) for a in architectures or ARCHITECTURE_IDS if backend.serves(a)]
    return pairs


def baseline_values(backend: str, architecture: str) -> dict[str, dict[str, tuple[Any, str]]]:
    """{section: {key: (value, source)}}: the backend's upstream values of one card."""
    from kura.backends.registry import get_backend

    knowledge = get_backend(backend).knowledge(architecture)
    return {
        section: {key: (known.value, known.source) for key, known in values.items()}
        for section, values in knowledge.baselines.items()
    }


def _new_card(backend: str, architecture: str) -> str:
    return (
        f"# {architecture} on {backend} — knowledge card\n\n"
        f"Values `kura run new --backend {backend}` drafts a run on this architecture from.\n"
        "One value per line: `- key: value — source: owner (date) | run <id> | agent (date) |\n"
        f"upstream ({backend}'s own docs, examples or code)`. Sections are tasks (`all` applies\n"
        "to every task). Kura never overwrites an owner, run or agent line; contradicting values\n"
        "stay side by side.\n\n## all\n"
    )


def _sync_card(workspace: Workspace, backend: str, architecture: str) -> CardSync:
    path = card_path(workspace, backend, architecture)
    text = read_card(path)
    created = not text
    if created:
        text = _new_card(backend, architecture)
    added = updated = 0
    for section, values in baseline_values(backend, architecture).items():
        for key, (value, source) in values.items():
            entries, _ = parse_card(text)
            upstream = [
                e for e in entries if e.section == section and e.key == key and e.kind == "upstream"
            ]
            line = entry_line(key, value, f"upstream ({source})")
            if not upstream:
                text = insert_entry(text, section, line)
                added += 1
            elif upstream[0].value != value or upstream[0].source != f"upstream ({source})":
                text = replace_line(text, upstream[0].line_index, line)
                updated += 1
    if created or added or updated:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    return CardSync(backend, architecture, created, added, updated)


def sync_baselines(workspace: Workspace, architectures: list[str] | None = None) -> list[CardSync]:
    """Write or refresh the upstream lines of every trainer's card (of ``architectures``)."""
    with workspace.lock():
        require_current_layout(workspace)
        return [_sync_card(workspace, b, a) for b, a in card_pairs(architectures)]


def sync_cards(workspace: Workspace, architectures: list[str] | None = None) -> KnowledgeSync:
    """:func:`sync_baselines` as ``kura knowledge sync`` reports it."""
    return KnowledgeSync(tuple(sync_baselines(workspace, architectures)))


def show_card(workspace: Workspace, architecture: str, backend: str | None = None) -> KnowledgeCard:
    """The workspace's card of ``architecture`` on ``backend`` (``kura knowledge show``);
    without ``backend``, the one trainer that trains the architecture (UsageError naming
    them when there are several)."""
    if backend is None:
        trainers = [b for b, a in card_pairs([architecture])]
        if len(trainers) != 1:
            raise UsageError(
                f"{architecture}: "
                + (f"{', '.join(trainers)} have cards" if trainers else "no trainer has a card")
                + " of this architecture",
                hint="name the trainer: --backend "
                + ("|".join(trainers) if trainers else "NAME (`kura backend list`)"),
            )
        backend = trainers[0]
    path = card_path(workspace, backend, architecture)
    entries, problems = parse_card(read_card(path))
    return KnowledgeCard(architecture, str(path), tuple(entries), tuple(problems), backend)
