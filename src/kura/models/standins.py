"""Stand-ins of a bundle's model files, laid out as a Hugging Face cache of sparse files.

For `kura demo` (no download) and tests: every role gets a file with its component's real
key names and shapes (header plus a hole, so a "24 GB" DiT costs no disk) in the hub cache
layout
(``blobs/<sha256-named file>``, ``snapshots/<commit>/<path>`` links, ``refs/main``).
Blob names stand in for digests: Kura trusts a blob's name as its sha256 until
``kura model verify`` re-hashes it, so the stand-in names are what a verify would catch.
Sharded files (``…-00001-of-00004…``) get every shard, the tensors spread across them.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from kura.models.bundles import Bundle
from kura.models.layouts import component_fixture, write_sparse_safetensors

__all__ = ["install_bundle_in_hub_cache"]

_SHARD_RE = re.compile(r"^(?P<stem>.*-)(?P<index>\d{5})-of-(?P<count>\d{5})(?P<ext>\.safetensors)$")
_COMMIT = "0" * 40


def install_bundle_in_hub_cache(bundle: Bundle, cache: Path) -> dict[str, Path]:
    """Write every safetensors role of ``bundle`` into ``cache``; return slot → snapshot path."""
    placed: dict[str, Path] = {}
    for spec in bundle.files:
        if spec.format != "safetensors" or not spec.filename or not spec.components:
            continue
        tensors, metadata = component_fixture(spec.components[0])
        folder = cache / ("models--" + spec.repo.replace("/", "--"))
        names = _shard_names(spec.filename)
        keys = sorted(tensors)
        for index, name in enumerate(names):
            part = {k: tensors[k] for k in keys[index :: len(names)]}
            blob = folder / "blobs" / hashlib.sha256(f"{spec.repo}/{name}".encode()).hexdigest()
            blob.parent.mkdir(parents=True, exist_ok=True)
            write_sparse_safetensors(blob, part, metadata)
            link = folder / "snapshots" / _COMMIT / name
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(blob)
        (folder / "refs").mkdir(exist_ok=True)
        (folder / "refs" / "main").write_text(_COMMIT)
        placed[spec.slot] = folder / "snapshots" / _COMMIT / spec.filename
    return placed


def _shard_names(filename: str) -> list[str]:
    directory, _, leaf = filename.rpartition("/")
    match = _SHARD_RE.match(leaf)
    if not match:
        return [filename]
    count = int(match.group("count"))
    prefix = f"{directory}/" if directory else ""
    return [
        f"{prefix}{match.group('stem')}{i:05d}-of-{count:05d}{match.group('ext')}"
        for i in range(1, count + 1)
    ]
