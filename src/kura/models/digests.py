"""The digest cache: a file's sha256 is computed once per (path, size, mtime_ns, inode, ctime).

The ctime is part of the key because it is the one stamp nobody can set: a file rewritten
in place at its old size with its mtime restored keeps size, mtime and inode, but not its
ctime. A hub blob trusted by name is recorded with its stat too (``hf-etag``), so a later
:meth:`DigestCache.lookup` tells whether those bytes are still the ones that were trusted.

Entries live in SQLite under :func:`kura.constants.cache_dir` (``KURA_CACHE_DIR`` in tests).
A file whose resolved path is a Hugging Face cache blob named by 64 hex digits is trusted by
name (``sha256_source: hf-etag``) without reading it; ``verify=True`` hashes it anyway and
records the result (``kura model verify``). Hashing streams the file in 8 MiB reads into a
reused buffer, which runs at ``sha256sum`` speed.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kura.constants import cache_dir
from kura.errors import CheckFailed, InvalidInput
from kura.models.hfcache import hub_blob_digest

__all__ = ["ByteProgress", "DigestCache", "DigestRecord", "hash_file"]

CHUNK = 8 * 1024 * 1024
_SCHEMA = """
CREATE TABLE IF NOT EXISTS digests_v2 (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    source TEXT NOT NULL,
    recorded_at REAL NOT NULL
)
"""


@dataclass(frozen=True)
class DigestRecord:
    """``source``: ``computed`` (Kura hashed the bytes), ``hf-etag`` (trusted from the hub
    blob name, not read) or ``verified`` (a hub blob whose bytes Kura hashed and found equal
    to its name). ``cached``: the digest came from the cache, nothing was read."""

    path: str
    size: int
    sha256: str
    source: str
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def hash_file(path: Path, progress: Callable[[int, int], None] | None = None) -> str:
    """Stream ``path`` through sha256 in 8 MiB reads."""
    digest = hashlib.sha256()
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    total = os.stat(path).st_size
    done = 0
    with open(path, "rb", buffering=0) as handle:
        while True:
            count = handle.readinto(buffer)
            if not count:
                break
            digest.update(view[:count])
            done += count
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


class ByteProgress:
    """Progress in bytes over several files hashed one after another (``kura model verify``,
    ``kura model lock``): ``report(done, total)`` with ``total`` every file's size, so a
    bar moves through gigabytes instead of jumping per file. A file answered from the cache
    counts as done at once."""

    def __init__(self, paths: list[Path], report: Callable[[int, int], None] | None) -> None:
        self.report = report
        self.sizes = {str(path): _size(path) for path in paths}
        self.total = sum(self.sizes.values())
        self.offset = 0

    def reading(self, path: Path) -> Callable[[int, int], None] | None:
        """The per-file callback for :func:`hash_file` while ``path`` is read."""
        report = self.report
        if report is None:
            return None
        offset, total = self.offset, self.total
        return lambda done, _size: report(offset + done, total)

    def finished(self, path: Path) -> None:
        self.offset += self.sizes.get(str(path), 0)
        if self.report is not None:
            self.report(self.offset, self.total)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class DigestCache:
    """sha256 per file, remembered while the file's stat key is unchanged."""

    def __init__(self, database: Path | None = None) -> None:
        self.database = database or cache_dir() / "digests.sqlite3"
        self._connection: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        """One connection per cache object, opened on first use (schema created once)."""
        if self._connection is None:
            self.database.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.database, timeout=30)
            connection.execute(_SCHEMA)
            connection.commit()
            self._connection = connection
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def lookup(self, path: Path) -> DigestRecord | None:
        """The remembered digest of ``path`` if the file has not changed since; else None."""
        key, stat = _key(path)
        row = (
            self._connect()
            .execute(
                "SELECT size, mtime_ns, inode, ctime_ns, sha256, source FROM digests_v2 "
                "WHERE path = ?",
                (key,),
            )
            .fetchone()
        )
        if row is None or tuple(row[:4]) != _stamp(stat):
            return None
        return DigestRecord(key, stat.st_size, row[4], row[5], cached=True)

    def digest(
        self,
        path: Path,
        *,
        verify: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> DigestRecord:
        """The sha256 of ``path``: from the cache, from a hub blob name, or hashed now.

        ``verify=True`` re-hashes even cached or hub-named files and raises
        :class:`CheckFailed` when the bytes disagree with the recorded or named digest."""
        key, stat = _key(path)
        named = hub_blob_digest(path)
        if not verify:
            cached = self.lookup(path)
            if cached is not None:
                return cached
            if named is not None:
                self._store(key, stat, named, "hf-etag")
                return DigestRecord(key, stat.st_size, named, "hf-etag")
        recorded = self.lookup(path) if verify and named is None else None
        expected = named if named is not None else (recorded.sha256 if recorded else None)
        actual = hash_file(Path(key), progress)
        if expected is not None and actual != expected:
            raise CheckFailed(
                f"{path}: its sha256 is {actual}, but "
                f"{'the hub cache names it' if named else 'Kura recorded'} {expected}",
                hint="the file is corrupt or was modified in place: delete it and download it "
                "again",
                path=path,
            )
        after = os.stat(key)
        if _stamp(after) != _stamp(stat):
            raise InvalidInput(
                f"{path} changed while it was being hashed",
                hint="run the command again when nothing writes to it",
                path=path,
            )
        source = "verified" if named else "computed"
        self._store(key, stat, actual, source)
        return DigestRecord(key, stat.st_size, actual, source)

    def _store(self, key: str, stat: os.stat_result, sha256: str, source: str) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO digests_v2 (path, size, mtime_ns, inode, ctime_ns, "
                "sha256, source, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, *_stamp(stat), sha256, source, time.time()),
            )


def _stamp(stat: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one version of a file from another without reading it."""
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)


def _key(path: Path) -> tuple[str, os.stat_result]:
    resolved = Path(os.path.realpath(path))
    try:
        return str(resolved), os.stat(resolved)
    except FileNotFoundError:
        raise InvalidInput(f"{path} does not exist", hint="check the path", path=path) from None
