"""Caches once: a trial's caching steps run once per key on a machine; later trials reuse.

The key is exact and backend-neutral: the cache steps as compiled (argv, env, working folder,
and the text of every compiled file they name), with the trial's own run folder replaced by a
placeholder, plus the locked digests of the datasets and model files. Two trials with the same
key would compute the same caches (same dataset × model × cache-relevant options); a change
the trainer's cache step sees (a different resolution, a different text encoder) changes the
key. A backend whose cache step reads a setting the trial changes for other reasons (Musubi's
dataset TOML carries the micro-batch) gets a new key for it: wasteful, never wrong.

The first trial with a key runs its cache steps, then copies ``<run>/cache`` into
``sweeps/<id>/cache/<key>/`` (hard links where possible); a later trial links that folder's
files into its own ``<run>/cache`` and skips those steps. A per-key lock makes a second worker
on the same machine wait for the first instead of computing the same caches twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from kura.fsutil import atomic_write_text
from kura.sweep.values import CacheNote

__all__ = ["CacheKey", "cache_key", "restore_cache", "store_cache", "stored"]

CACHE_KINDS = ("cache",)
_PLACEHOLDER = "{run}"


@dataclass(frozen=True)
class CacheKey:
    digest: str
    steps: tuple[str, ...]

    @property
    def short(self) -> str:
        return self.digest.removeprefix("sha256:")[:20]


def cache_key(run_dir: Path, run_dir_seen: str) -> CacheKey | None:
    """The cache key of a compiled trial, or None when it has no caching step."""
    compiled = run_dir / "compiled"
    from dataclasses import asdict

    from kura.bounded import load_json
    from kura.schema.compiled import StepsFile
    from kura.schema.machine import read_machine_file

    remedy = f"compile the trial again (`kura run plan {run_dir.name}`)"
    steps_doc = read_machine_file(StepsFile, compiled / "steps.json", remedy=remedy)
    lock = load_json(compiled / "run.lock")
    steps = [asdict(s) for s in steps_doc.steps if s.kind in CACHE_KINDS]
    if not steps:
        return None

    def norm(text: str) -> str:
        return text.replace(run_dir_seen, _PLACEHOLDER)

    files: dict[str, str] = {}
    for step in steps:
        for arg in step["argv"]:
            for path in compiled.glob("*"):
                if path.is_file() and path.name in arg:
                    files[path.name] = norm(path.read_text(encoding="utf-8"))
    material = {
        "steps": [
            {
                "name": s["name"],
                "argv": [norm(a) for a in s["argv"]],
                "env": {k: norm(v) for k, v in sorted(s["env"].items())},
                "cwd": norm(s["cwd"]),
            }
            for s in steps
        ],
        "files": files,
        "datasets": lock["datasets"],
        "models": lock["models"],
        "trainer": lock["trainer"],
    }
    canonical = json.dumps(material, sort_keys=True).encode()
    digest = "sha256:" + hashlib.sha256(canonical).hexdigest()
    return CacheKey(digest, tuple(s["name"] for s in steps))


def _store(sweep_folder: Path, key: CacheKey) -> Path:
    return sweep_folder / "cache" / key.short


def stored(sweep_folder: Path, key: CacheKey) -> bool:
    return (_store(sweep_folder, key) / "key.json").is_file()


def _link_tree(source: Path, target: Path) -> int:
    count = 0
    for path in sorted(source.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            dest.unlink()
        try:
            os.link(path, dest)
        except OSError:
            shutil.copy2(path, dest)
        count += 1
    return count


def store_cache(sweep_folder: Path, key: CacheKey, run_dir: Path, *, run_id: str) -> int:
    """Keep a finished trial's caches for the next trials (files linked, key written last)."""
    target = _store(sweep_folder, key)
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    count = _link_tree(run_dir / "cache", staging / "files")
    atomic_write_text(
        staging / "key.json",
        json.dumps({"key": key.digest, "steps": list(key.steps), "from": run_id}, indent=2) + "\n",
    )
    if target.exists():
        shutil.rmtree(staging, ignore_errors=True)
        return count
    os.rename(staging, target)
    return count


def restore_cache(sweep_folder: Path, key: CacheKey, run_dir: Path) -> CacheNote:
    """Link the stored caches into a trial's ``cache/``; returns what the trial records."""
    source = _store(sweep_folder, key)
    count = _link_tree(source / "files", run_dir / "cache")
    origin = json.loads((source / "key.json").read_text(encoding="utf-8"))["from"]
    return CacheNote(key=key.digest, reused_from=origin, files=count, skipped=tuple(key.steps))
