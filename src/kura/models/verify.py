"""`kura model verify`: re-hash files and compare with the digests Kura knows for them.

A hub-cache blob is compared with the sha256 it is named by, a file Kura hashed before with
the recorded digest (when unchanged since), and a bundle's file with its published sha256.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from kura.errors import CheckFailed, InvalidInput, KuraError
from kura.models.digests import ByteProgress, DigestCache
from kura.models.header import read_header
from kura.models.identify import shard_siblings
from kura.nextsteps import NextStep, next_list

__all__ = ["FileVerification", "Verification", "verify_target"]

VerifyStatus = Literal["ok", "mismatch", "invalid"]


@dataclass(frozen=True)
class FileVerification:
    """One file re-hashed: ``ok``, a ``mismatch`` with the digest it should have, or
    ``invalid`` (not a whole file, or unreadable); ``sha256`` None where none was read."""

    path: str
    expected_sha256: str | None
    status: VerifyStatus
    sha256: str | None
    sha256_source: str | None
    problems: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "expected_sha256": self.expected_sha256,
            "status": self.status,
            "sha256": self.sha256,
            "sha256_source": self.sha256_source,
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class Verification:
    """``kura model verify``: every file of ``target`` (a file, with its shards, or a
    bundle's found files) re-hashed; ``ok`` when all of them match."""

    target: str
    target_kind: Literal["file", "bundle"]
    files: tuple[FileVerification, ...]
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "model-verify"

    @property
    def ok(self) -> bool:
        return all(f.status == "ok" for f in self.files)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "target": self.target,
            "target_kind": self.target_kind,
            "ok": self.ok,
            "files": [f.to_dict() for f in self.files],
            "next": next_list(*self.next),
        }


def verify_target(
    target: str,
    *,
    models_dir: Path | None = None,
    digests: DigestCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Verification:
    """Verify a file path, or every file of the bundle named ``target`` that resolves;
    ``progress(bytes hashed, bytes in all)`` as the files are read."""
    digests = digests or DigestCache()
    path = Path(target).expanduser()
    if not path.exists() and ("/" in target or target.endswith((".safetensors", ".pt", ".pth"))):
        raise InvalidInput(
            f"{target} does not exist", hint="pass an existing file or a bundle id", path=target
        )
    if path.exists():
        items: list[tuple[Path, str | None]] = [(p, None) for p in (shard_siblings(path) or [path])]
        kind: Literal["file", "bundle"] = "file"
    else:
        from kura.models.resolve import resolve_bundle

        resolution = resolve_bundle(target, models_dir=models_dir)
        items = []
        for role in resolution.roles:
            if role.path is None or role.spec.format == "hf-repo" or not role.path.is_file():
                continue
            files = list(role.shards) or [role.path]
            items += [(p, role.spec.sha256 if i == 0 else None) for i, p in enumerate(files)]
        kind = "bundle"
    hashing = ByteProgress([p for p, _ in items], progress)
    entries = []
    for path, expected in items:
        entries.append(_verify_one(path, expected, digests, hashing.reading(path)))
        hashing.finished(path)
    return Verification(target=target, target_kind=kind, files=tuple(entries))


def _structure_problem(path: Path) -> str | None:
    """Why a ``.safetensors`` file is not whole (truncated below its header's data end,
    trailing bytes, a damaged header), or ``None``. A digest alone cannot tell: a file Kura
    never hashed before has nothing to compare with."""
    if not path.name.endswith(".safetensors"):
        return None
    try:
        read_header(path)
    except InvalidInput as error:
        return error.message
    return None


def _verify_one(
    path: Path,
    expected: str | None,
    digests: DigestCache,
    progress: Callable[[int, int], None] | None = None,
) -> FileVerification:
    def unread(status: VerifyStatus, problem: str) -> FileVerification:
        return FileVerification(str(path), expected, status, None, None, (problem,))

    if (problem := _structure_problem(path)) is not None:
        return unread("invalid", problem)
    try:
        record = digests.digest(path, verify=True, progress=progress)
    except CheckFailed as error:
        return unread("mismatch", error.message)
    except KuraError as error:
        return unread("invalid", error.message)
    problems = (
        ()
        if expected in (None, record.sha256)
        else (f"sha256 {record.sha256} differs from the published {expected}",)
    )
    return FileVerification(
        path=str(path),
        expected_sha256=expected,
        status="mismatch" if problems else "ok",
        sha256=record.sha256,
        sha256_source=record.source,
        problems=problems,
    )
