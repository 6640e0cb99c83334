"""`kura init`: a workspace's folders and settings, then its baseline knowledge cards."""

from __future__ import annotations

from pathlib import Path

from kura.knowledge.baselines import sync_baselines
from kura.workspace import Workspace, create_layout

__all__ = ["init_workspace"]


def init_workspace(root: Path) -> tuple[Workspace, list[str]]:
    """Create (or complete) the workspace at ``root``; returns what was created."""
    workspace, created = create_layout(root)
    created += [f"knowledge/{r.architecture}.md" for r in sync_baselines(workspace) if r.created]
    return workspace, created
