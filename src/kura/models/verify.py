"""`kura model verify`: re-hash files and compare with the digests Kura knows for them.

A hub-cache blob is compared with the sha256 it is named by, a file Kura hashed before with
the recorded digest (when unchanged since), and a bundle's file with its published sha256.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kura.errors import CheckFailed, InvalidInput, KuraError
from kura.models.digests import DigestCache
from kura.models.header import read_header
from kura.models.identify import shard_siblings

__all__ = ["verify_target"]


def verify_target(
    target: str, *, models_dir: Path | None = None, digests: DigestCache | None = None
) -> dict[str, Any]:
    """Verify a file path, or every file of the bundle named ``target`` that resolves."""
    digests = digests or DigestCache()
    path = Path(target).expanduser()
    if not path.exists() and ("/" in target or target.endswith((".safetensors", ".pt", ".pth"))):
        raise InvalidInput(
            f"{target} does not exist", hint="pass an existing file or a bundle id", path=target
        )
    if path.exists():
        items: list[tuple[Path, str | None]] = [(p, None) for p in (shard_siblings(path) or [path])]
        kind = "file"
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
    entries = [_verify_one(p, expected, digests) for p, expected in items]
    return {
        "kind": "model-verify",
        "target": target,
        "target_kind": kind,
        "ok": all(e["status"] == "ok" for e in entries),
        "files": entries,
    }


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


def _verify_one(path: Path, expected: str | None, digests: DigestCache) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": str(path), "expected_sha256": expected}
    if (problem := _structure_problem(path)) is not None:
        return {
            **entry,
            "status": "invalid",
            "sha256": None,
            "sha256_source": None,
            "problems": [problem],
        }
    try:
        record = digests.digest(path, verify=True)
    except CheckFailed as error:
        return {
            **entry,
            "status": "mismatch",
            "sha256": None,
            "sha256_source": None,
            "problems": [error.message],
        }
    except KuraError as error:
        return {
            **entry,
            "status": "invalid",
            "sha256": None,
            "sha256_source": None,
            "problems": [error.message],
        }
    problems = (
        []
        if expected in (None, record.sha256)
        else [f"sha256 {record.sha256} differs from the published {expected}"]
    )
    return {
        **entry,
        "status": "mismatch" if problems else "ok",
        "sha256": record.sha256,
        "sha256_source": record.source,
        "problems": problems,
    }
