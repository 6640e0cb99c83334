"""What every command receives: the output layer and the workspace it works in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kura.cli._output import Output

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = ["AppState"]


@dataclass
class AppState:
    out: Output
    workspace_path: Path | None

    def workspace(self) -> Workspace:
        from kura.workspace import find_workspace

        return find_workspace(explicit=self.workspace_path)
