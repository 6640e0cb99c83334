"""The model lock: a deterministic record of exactly which files a run uses.

Per role: path, size, sha256 (or ``pending`` with the expected digest when the file is not
downloaded yet), where the digest came from, the header digest and the component. Keys are
sorted and the text is canonical JSON, so an unchanged set of files gives the same bytes;
:func:`write_lock` rewrites the file only when those bytes change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kura.errors import CheckFailed
from kura.fsutil import write_text_if_changed
from kura.models.digests import ByteProgress, DigestCache, DigestRecord
from kura.models.resolve import Resolution, RoleResolution
from kura.nextsteps import NextStep, next_list

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = ["LOCK_VERSION", "LockWritten", "build_lock", "lock_bundle", "lock_text", "write_lock"]

LOCK_VERSION = 1


def build_lock(
    resolution: Resolution,
    digests: DigestCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The lock document for a resolved bundle. Refused or invalid files cannot be locked
    (:class:`CheckFailed`); missing ones are recorded as ``pending``. Paths are recorded as
    found (a hub-cache snapshot link, not the blob it points to)."""
    digests = digests or DigestCache()
    refused = [r for r in resolution.roles if r.status in ("refused", "invalid")]
    if refused:
        lines = "; ".join(f"{r.spec.slot}: {', '.join(r.problems)}" for r in refused)
        raise CheckFailed(
            f"bundle {resolution.bundle.id} cannot be locked: {lines}",
            hint="fix or replace those files (`kura model resolve` shows where each was found)",
        )
    bundle = resolution.bundle
    hashing = ByteProgress([p for r in resolution.roles for p in _hashed_files(r)], progress)
    return {
        "kind": "model-lock",
        "version": LOCK_VERSION,
        "bundle": bundle.id,
        "architecture": bundle.architecture,
        "backend": bundle.backend,
        "trainer": dict(sorted(bundle.trainer.items())),
        "roles": {
            r.spec.slot: _lock_entry(r, digests, hashing)
            for r in sorted(resolution.roles, key=lambda r: r.spec.slot)
        },
    }


def _hashed_files(entry: RoleResolution) -> list[Path]:
    """The files the lock hashes for a role: none for a missing file or a repo snapshot."""
    if entry.status == "missing" or entry.path is None or entry.spec.format == "hf-repo":
        return []
    return list(entry.shards) or [entry.path]


def _digests(files: list[Path], digests: DigestCache, hashing: ByteProgress) -> list[DigestRecord]:
    records = []
    for path in files:
        records.append(digests.digest(path, progress=hashing.reading(path)))
        hashing.finished(path)
    return records


def _lock_entry(
    entry: RoleResolution, digests: DigestCache, hashing: ByteProgress
) -> dict[str, Any]:
    spec = entry.spec
    base: dict[str, Any] = {
        "role": spec.role,
        "source": {"repo": spec.repo, "filename": spec.filename, "revision": spec.revision},
        "expected_sha256": spec.sha256,
    }
    if entry.status == "missing" or entry.path is None:
        return {
            **base,
            "path": None,
            "size": spec.size,
            "sha256": "pending",
            "sha256_source": None,
            "header_digest": None,
            "component": None,
            "shards": [],
        }
    if spec.format == "hf-repo":
        return {
            **base,
            "path": str(entry.path),
            "size": None,
            "sha256": None,
            "sha256_source": "not-hashed-repo-snapshot",
            "header_digest": None,
            "component": None,
            "shards": [],
        }
    files = _hashed_files(entry)
    records = _digests(files, digests, hashing)
    first = records[0]
    if spec.sha256 is not None and first.sha256 != spec.sha256:
        raise CheckFailed(
            f"{entry.path}: sha256 {first.sha256} differs from the published {spec.sha256}",
            hint="the file is not the published one: download it again (`kura model fetch`)",
            path=entry.path,
        )
    report = entry.report
    return {
        **base,
        "path": str(files[0]),
        "size": first.size,
        "sha256": first.sha256,
        "sha256_source": first.source,
        "header_digest": report.header_digest if report else None,
        "component": report.component if report else None,
        "shards": [
            {"path": str(p), "size": r.size, "sha256": r.sha256}
            for p, r in zip(files[1:], records[1:], strict=True)
        ],
    }


def lock_text(document: dict[str, Any]) -> str:
    """Canonical JSON: sorted keys, two-space indent, trailing newline."""
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_lock(path: Path, document: dict[str, Any]) -> bool:
    """Write ``document`` to ``path`` if its text differs from what is there; say whether it did."""
    return write_text_if_changed(path, lock_text(document))


@dataclass(frozen=True)
class LockWritten:
    """``kura model lock``: the lock document (the file's own format, :func:`build_lock`)
    at ``lock_path``, and whether its bytes changed (``written``)."""

    lock: Mapping[str, Any]
    lock_path: str
    written: bool
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "model-lock"

    @property
    def bundle(self) -> str:
        return str(self.lock["bundle"])

    def to_dict(self) -> dict[str, object]:
        return {
            **self.lock,
            "lock_path": self.lock_path,
            "written": self.written,
            "next": next_list(*self.next),
        }


def lock_bundle(
    workspace: Workspace,
    bundle_id: str,
    paths: tuple[str, ...] | list[str] = (),
    progress: Callable[[int, int], None] | None = None,
) -> LockWritten:
    """Resolve ``bundle_id`` in the workspace (``ROLE=FILE`` ``paths`` first) and write
    ``models/<bundle>.lock.json`` when its bytes change; ``progress(bytes hashed, bytes
    in all)`` while files not yet in the digest cache are read."""
    from kura.models.bundles import get_bundle
    from kura.models.resolve import parse_path_overrides, resolve_bundle

    bundle = get_bundle(bundle_id)
    resolution = resolve_bundle(
        bundle, models_dir=workspace.models_dir, paths=parse_path_overrides(paths, bundle)
    )
    document = build_lock(resolution, progress=progress)
    target = workspace.models_dir / f"{bundle.id}.lock.json"
    with workspace.lock():
        written = write_lock(target, document)
    return LockWritten(lock=document, lock_path=str(target), written=written)
