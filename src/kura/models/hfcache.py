"""Where the Hugging Face hub cache is, and what a path inside it tells about its file.

Read without importing ``huggingface_hub`` (which reads its environment once, at import):
``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``XDG_CACHE_HOME/huggingface/hub``, else
``~/.cache/huggingface/hub`` — the same order the library uses. In the cache,
``models--<org>--<name>/blobs/<etag>`` holds the bytes, and for LFS files the etag is the
file's sha256, so a blob's name is its digest.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = [
    "cached_file",
    "hf_cache_dir",
    "hf_endpoint",
    "hf_token",
    "hub_blob_digest",
    "repo_cache_folder",
]

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def hf_cache_dir() -> Path:
    """The hub cache folder, from the environment at call time."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def hf_endpoint() -> str | None:
    """``HF_ENDPOINT`` if set (a mirror, or a test server), else None for the public hub."""
    value = os.environ.get("HF_ENDPOINT", "").strip()
    return value.rstrip("/") or None


def hf_token() -> str | bool:
    """The hub token from ``HF_TOKEN`` only; ``False`` (no token, not even a stored login)
    when unset. Kura never writes it anywhere."""
    value = os.environ.get("HF_TOKEN", "").strip()
    return value or False


def repo_cache_folder(repo_id: str, cache: Path | None = None) -> Path:
    return (cache or hf_cache_dir()) / ("models--" + repo_id.replace("/", "--"))


def cached_file(
    repo_id: str, filename: str, revision: str = "main", cache: Path | None = None
) -> Path | None:
    """The snapshot path of ``filename`` in the cache: the revision ``refs`` points to first,
    then any other snapshot holding the file (newest first); None when not cached."""
    folder = repo_cache_folder(repo_id, cache)
    snapshots = folder / "snapshots"
    if not snapshots.is_dir():
        return None
    ref = folder / "refs" / revision
    preferred = ref.read_text(encoding="utf-8").strip() if ref.is_file() else revision
    others = sorted(
        (p for p in snapshots.iterdir() if p.name != preferred),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    candidates = [snapshots / preferred, *others]
    for snapshot in candidates:
        path = snapshot / filename if filename else snapshot
        if (filename and path.is_file()) or (not filename and path.is_dir()):
            return path
    return None


def hub_blob_digest(path: Path) -> str | None:
    """The sha256 a hub-cache blob is named by, when ``path`` (after symlinks) is
    ``…/blobs/<64 hex>``; None otherwise (git-sha1-named small files included)."""
    try:
        real = Path(os.path.realpath(path))
    except OSError:
        return None
    if real.parent.name == "blobs" and _SHA256_RE.match(real.name):
        return real.name
    return None
