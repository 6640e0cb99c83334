"""The mounts every containerised run needs, whichever trainer it runs.

A run's container sees its run folder read-only (the compiled files), the run's own output
folders writable, each dataset's media and control folders and each model file read-only.
A backend adds what only its trainer reads (the sample prompts' images, a baked cache) and
passes the list through :func:`unique_mounts`. Mounts name the container side only; the
executor supplies the host side.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from kura.backends.base import CompileInputs, Mount

__all__ = ["run_mounts", "unique_mounts"]


def run_mounts(inputs: CompileInputs, *, writable: Iterable[str], holds: str) -> list[Mount]:
    """The run folder (read-only, ``holds`` saying what the trainer reads there), its
    ``writable`` sub-folders, every dataset's media and controls, and every model file."""
    mounts = [Mount(target=inputs.run_dir, read_only=True, purpose=f"run folder ({holds})")]
    for sub in writable:
        path = posixpath.join(inputs.run_dir, sub)
        mounts.append(Mount(target=path, read_only=False, purpose=f"run {sub}"))
    for source in inputs.datasets:
        mounts.append(
            Mount(target=source.media_dir, read_only=True, purpose=f"dataset {source.name}")
        )
        if source.control_dir is not None:
            purpose = f"controls of dataset {source.name}"
            mounts.append(Mount(target=source.control_dir, read_only=True, purpose=purpose))
    for role, path in sorted(inputs.model_paths.items()):
        mounts.append(Mount(target=path, read_only=True, purpose=f"model {role}"))
    return mounts


def unique_mounts(mounts: Iterable[Mount]) -> tuple[Mount, ...]:
    """Repeated targets dropped, the first kept (the run's own, most restrictive order)."""
    seen: set[str] = set()
    kept: list[Mount] = []
    for mount in mounts:
        if mount.target not in seen:
            seen.add(mount.target)
            kept.append(mount)
    return tuple(kept)
