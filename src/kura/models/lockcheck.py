"""Are the model files a lock names still the files that were locked?

The launch gate calls :func:`verify_locked_models` before anything else runs. Per role and
shard: the file exists and is a regular file, its size is the locked size, its sha256 is the
locked one — taken from the digest cache only while size, mtime, inode and ctime are all
unchanged since it was hashed (or trusted by its hub-blob name), and re-hashed otherwise —
and a safetensors header is read again and judged for its role, with the locked header
digest. Any difference refuses, naming the file and the role.
"""

from __future__ import annotations

from pathlib import Path

from kura.errors import CheckFailed, KuraError
from kura.models.digests import DigestCache
from kura.schema.lock import LockedModels, LockedRole

__all__ = ["verify_locked_models"]


def verify_locked_models(
    models: LockedModels,
    *,
    run_id: str,
    digests: DigestCache | None = None,
    plan: str | None = None,
) -> None:
    """CheckFailed naming the first file (and its role) that is not as locked; ``plan`` is
    the command that plans the run again (with the GPU class it was planned for)."""
    digests = digests or DigestCache()
    plan = plan or f"kura run plan {run_id}"
    again = f"`{plan}`, read plan.md, then `kura run approve {run_id}`"
    pending = sorted(slot for slot, r in models.roles.items() if r.sha256 == "pending")
    if pending:
        raise CheckFailed(
            f"model files not downloaded yet: {', '.join(pending)}",
            hint=f"`kura model fetch {models.bundle}`, then {again}",
        )
    try:
        for slot, role in sorted(models.roles.items()):
            _verify_role(models, slot, role, digests, again)
    finally:
        digests.close()


def _verify_role(
    models: LockedModels, slot: str, role: LockedRole, digests: DigestCache, again: str
) -> None:
    if role.path is None:
        return
    where = f"model file for {slot} ({role.role})"
    if role.sha256 is None:  # a repository snapshot folder: Kura locks its place only
        if not Path(role.path).is_dir():
            raise CheckFailed(f"{where} {role.path} is gone", hint=f"restore it, or {again}")
        return
    files = [(Path(role.path), role.size, role.sha256)]
    files += [(Path(s.path), s.size, s.sha256) for s in role.shards]
    for path, size, sha256 in files:
        _verify_file(path, size, sha256, where, digests, again)
    if role.header_digest is not None and Path(role.path).name.endswith(".safetensors"):
        _verify_header(models, slot, role, where, again)


def _verify_file(
    path: Path, size: int | None, sha256: str, where: str, digests: DigestCache, again: str
) -> None:
    if not path.exists():
        raise CheckFailed(f"{where}: {path} is gone since approval", hint=f"restore it, or {again}")
    if not path.is_file():
        raise CheckFailed(f"{where}: {path} is not a regular file", hint=again, path=path)
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        raise CheckFailed(
            f"{where}: {path} has {actual_size} bytes, the approved file had {size}",
            hint=f"put the approved file back, or {again}",
            path=path,
        )
    cached = digests.lookup(path)
    if cached is not None and cached.sha256 == sha256:
        return
    try:
        record = digests.digest(path, verify=True)
    except KuraError as error:
        raise CheckFailed(f"{where}: {error.message}", hint=again, path=path) from None
    if record.sha256 != sha256:
        raise CheckFailed(
            f"{where}: {path} is not the approved file (sha256 {record.sha256[:16]}…, approved "
            f"{sha256[:16]}…)",
            hint=f"put the approved file back, or {again}",
            path=path,
        )


def _verify_header(
    models: LockedModels, slot: str, role: LockedRole, where: str, again: str
) -> None:
    from kura.models.bundles import get_bundle
    from kura.models.resolve import judge_file

    bundle = get_bundle(models.bundle)
    spec = next((f for f in bundle.files if f.slot == slot), None)
    path = Path(role.path or "")
    if spec is None:
        raise CheckFailed(f"bundle {models.bundle} has no role {slot} any more", hint=again)
    verdict = judge_file(path, spec, bundle)
    if not verdict.accepted:
        raise CheckFailed(
            f"{where}: {path} cannot serve it: {'; '.join(verdict.problems)}",
            hint=f"put the approved file back, or {again}",
            path=path,
        )
    found = verdict.report.header_digest if verdict.report is not None else None
    if found != role.header_digest:
        raise CheckFailed(
            f"{where}: {path}'s header changed since approval (digest {found}, approved "
            f"{role.header_digest})",
            hint=f"put the approved file back, or {again}",
            path=path,
        )
