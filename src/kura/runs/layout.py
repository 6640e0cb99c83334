"""Where a run's inputs appear to the trainer.

In a container (docker, and SkyPilot which runs the same image) every input has a fixed
place under ``/kura``; on the host the trainer sees the real paths. ``PathMap`` keeps the
pairs so the container spec's mounts get their host sides.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from kura.errors import InvalidInput

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
        """A model file or folder. A file's symlinks (the HF cache's snapshot → blob) are
        resolved on the host side, because a link into a folder that is not mounted breaks
        in the container. A folder whose files link outside it (a Hugging Face snapshot,
        its files relative links into ``../../blobs``) is mounted from the smallest folder
        holding every link target (the repository's cache), so every link resolves inside
        the container; a dangling link is refused here, at compile."""
        if not self.in_container or not host.is_dir():
            target = posixpath.join(CONTAINER_ROOT, "models", slot, host.name)
            return self._map(host.resolve() if self.in_container else host, target)
        folder = host.resolve()
        root = _link_root(slot, folder)
        base = posixpath.join(CONTAINER_ROOT, "models", slot, root.name)
        self._map(root, base)
        inner = folder.relative_to(root).as_posix()
        return base if inner == "." else posixpath.join(base, inner)

    def pairs_host(self, target: str) -> str | None:
        """The host path of ``target`` or of a path inside a mounted folder."""
        for host, mapped in self.pairs.items():
            if target == mapped:
                return host
            if target.startswith(mapped + "/"):
                return host + target[len(mapped) :]
        return None

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


def _link_root(slot: str, folder: Path) -> Path:
    """The smallest folder holding ``folder`` and every file its symlinks point to."""
    targets = [folder]
    for entry in sorted(folder.rglob("*")):
        if not entry.is_symlink():
            continue
        resolved = entry.resolve()
        if not resolved.exists():
            raise InvalidInput(
                f"model {slot}: {entry} is a link to {resolved}, which does not exist "
                "(an incomplete Hugging Face download?)",
                hint="download the repository again (e.g. `kura model fetch`), or give "
                "model.paths a folder of real files",
                path=entry,
            )
        targets.append(resolved)
    root = Path(os.path.commonpath([str(t) for t in targets]))
    if root == Path(root.anchor):
        raise InvalidInput(
            f"model {slot}: the links in {folder} point across the whole file system; Kura "
            "would have to mount / to keep them resolving in the container",
            hint="give model.paths a folder of real files (copy with `cp -rL`)",
            path=folder,
        )
    return root
