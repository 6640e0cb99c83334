"""`kura init`: a workspace's folders and settings, then its baseline knowledge cards."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from kura.knowledge.baselines import sync_baselines
from kura.nextsteps import NextStep, next_list
from kura.workspace import Workspace, create_layout

__all__ = ["WorkspaceInit", "init_workspace", "initialize"]


@dataclass(frozen=True)
class WorkspaceInit:
    """``kura init``: the workspace ``root`` and what was ``created`` there (relative paths,
    folders with a trailing ``/``; empty when the workspace was already complete)."""

    root: str
    created: tuple[str, ...]
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "workspace-init"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "root": self.root,
            "created": list(self.created),
            "next": next_list(*self.next),
        }


def init_workspace(root: Path) -> tuple[Workspace, list[str]]:
    """Create (or complete) the workspace at ``root``; returns what was created."""
    workspace, created = create_layout(root)
    created += [r.card for r in sync_baselines(workspace) if r.created]
    return workspace, created


def initialize(root: Path) -> WorkspaceInit:
    """:func:`init_workspace` as ``kura init`` reports it."""
    workspace, created = init_workspace(root)
    return WorkspaceInit(root=str(workspace.root), created=tuple(created))
