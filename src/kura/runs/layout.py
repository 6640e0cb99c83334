"""Where a run's inputs appear to the trainer.

In a container (docker, and SkyPilot which runs the same image) every input has a fixed
place under ``/kura``; on the host the trainer sees the real paths. ``PathMap`` keeps the
pairs so the container spec's mounts get their host sides.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CONTAINER_ROOT", "PathMap"]

CONTAINER_ROOT = "/kura"


@dataclass
class PathMap:
    """Host path → path as the trainer sees it; identity on the host executor."""

    in_container: bool
    pairs: dict[str, str] = field(default_factory=dict)

    def run_dir(self, host: Path) -> str:
        return self._map(host, posixpath.join(CONTAINER_ROOT, "run"))

    def dataset(self, name: str, host: Path, *, control: bool = False) -> str:
        leaf = f"{name}.control" if control else name
        return self._map(host, posixpath.join(CONTAINER_ROOT, "data", leaf))

    def model(self, slot: str, host: Path) -> str:
        """A model file; symlinks (the HF cache's snapshot → blob) are resolved on the host
        side, because a link into a folder that is not mounted breaks in the container."""
        target = posixpath.join(CONTAINER_ROOT, "models", slot, host.name)
        return self._map(host.resolve() if self.in_container else host, target)

    def host_side(self, target: str) -> str | None:
        for host, mapped in self.pairs.items():
            if mapped == target:
                return host
        return None

    def _map(self, host: Path, target: str) -> str:
        if not self.in_container:
            return str(host)
        self.pairs[str(host)] = target
        return target
