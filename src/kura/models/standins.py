"""Stand-ins of a bundle's model files, laid out as a Hugging Face cache of sparse files.

For `kura demo` (no download) and tests: every role gets a file with its component's real
key names and shapes (header plus a hole, so a "24 GB" DiT costs no disk) in the hub cache
layout
(``blobs/<sha256 of the content>``, ``snapshots/<commit>/<path>`` links, ``refs/main``).
Each blob is named by its content's sha256, as the hub names its blobs, so a launch check or
``kura model verify`` that re-hashes a stand-in (an empty digest cache) finds the digest its
name promised and does not refuse the demo's own run. Hashing a stand-in means hashing its
hole (gigabytes of zeros), so each digest is computed once from the header and the data
length and remembered in the user cache (``standin-digests.json``).
Sharded files (``…-00001-of-00004…``) get every shard, the tensors spread across them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from kura.models.bundles import Bundle
from kura.models.layouts import component_fixture, header_bytes, write_sparse_safetensors

__all__ = ["DIGEST_MEMO", "install_bundle_in_hub_cache", "standin_digest"]

DIGEST_MEMO = "standin-digests.json"
"""The file under :func:`kura.constants.cache_dir` that keeps each stand-in's digest: a
stand-in is named by the sha256 of its whole sparse file, gigabytes of zeros to hash."""

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
            blob = folder / "blobs" / standin_digest(part, metadata)
            if not blob.is_file():
                _write_blob(blob, part, metadata)
            link = folder / "snapshots" / _COMMIT / name
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(blob)
        (folder / "refs").mkdir(exist_ok=True)
        (folder / "refs" / "main").write_text(_COMMIT)
        placed[spec.slot] = folder / "snapshots" / _COMMIT / spec.filename
    return placed


def standin_digest(
    tensors: Mapping[str, tuple[str, list[int]]], metadata: Mapping[str, str] | None
) -> str:
    """The sha256 of the sparse safetensors file ``write_sparse_safetensors`` writes."""
    raw, data_length = header_bytes(tensors, metadata)
    prefix = len(raw).to_bytes(8, "little") + raw
    key = f"{hashlib.sha256(prefix).hexdigest()}:{data_length}"
    known = _known_digests()
    if key not in known:
        known[key] = _hash_with_zeros(prefix, data_length)
        _save_known_digests(known)
    return known[key]


def _hash_with_zeros(prefix: bytes, zeros: int) -> str:
    digest = hashlib.sha256(prefix)
    chunk = bytes(8 * 1024 * 1024)
    view = memoryview(chunk)
    while zeros > 0:
        count = min(zeros, len(chunk))
        digest.update(view[:count])
        zeros -= count
    return digest.hexdigest()


def _memo_path() -> Path:
    from kura.constants import cache_dir

    return cache_dir() / DIGEST_MEMO


def _known_digests() -> dict[str, str]:
    """Digests computed before (a damaged or absent memo is an empty one: each entry is
    only the hash of zeros after a header, recomputed at the cost of time)."""
    try:
        data = json.loads(_memo_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str) and len(v) == 64}


def _save_known_digests(known: dict[str, str]) -> None:
    from kura.fsutil import atomic_write_text

    path = _memo_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(known, sort_keys=True))
    except OSError:
        return  # the next install hashes again; the blob names are the same


def _write_blob(
    blob: Path, tensors: Mapping[str, tuple[str, list[int]]], metadata: Mapping[str, str] | None
) -> None:
    blob.parent.mkdir(parents=True, exist_ok=True)
    partial = blob.with_name(f".{blob.name}.{os.getpid()}.partial")
    write_sparse_safetensors(partial, tensors, metadata)
    os.replace(partial, blob)


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
