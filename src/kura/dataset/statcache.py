"""A SQLite cache of per-file facts, so an unchanged dataset is re-inspected without reading.

It also keeps each folder's last finished inspection under the digest of everything it was
made from (:mod:`kura.dataset.reportcache` builds both and says when one may be reused).

A row is keyed by the file's absolute path (as bytes, so any file name fits) and is valid
only while its size, ``mtime_ns``, inode and ``ctime_ns`` are unchanged and the row was
written by the current ``SCHEMA_VERSION`` of the facts; anything else is a miss and the file
is read again. The ctime matters: a file rewritten in place at the same size with its mtime
set back (``touch -d``) keeps size, mtime and inode, but the kernel moves its ctime, which
no user call can set. Writes are batched into one transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

from kura.constants import cache_dir
from kura.errors import FileSystemError, InvalidInput, KuraError, file_system_error

__all__ = ["SCHEMA_VERSION", "FileKey", "StatCache", "cache_error"]

SCHEMA_VERSION = 3
DEFAULT_NAME = "dataset-facts.sqlite3"
TABLE = "facts_v3"
"""Rows keyed with the ctime (older Kura's ``facts`` table lacks it and is never read)."""
REPORTS = "reports_v1"
"""One row per inspection slot (a folder and its settings): the digest of what the report
was made from, and the report."""


class FileKey(NamedTuple):
    """What identifies one version of a file without reading it.

    A named tuple, not a dataclass: a warm look at a dataset makes and hashes one per file
    (10,000 at 5,000 captioned images), and a tuple is made and hashed in C."""

    path: str
    size: int
    mtime_ns: int
    inode: int
    ctime_ns: int = 0

    @classmethod
    def of(cls, path: Path | str) -> FileKey:
        """Stat ``path`` (following symlinks); raises ``OSError`` when it cannot."""
        path = os.fspath(path)
        info = os.stat(path)
        absolute = path if os.path.isabs(path) else os.path.abspath(path)
        # tuple.__new__ as the named tuple's own __new__ calls it, one Python call less
        return tuple.__new__(
            cls, (absolute, info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)
        )


_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
"""What ``os.fsencode`` encodes with, bound once (it is called for every file)."""

_DECODER = json.JSONDecoder()


def _parse(text: str) -> Any:
    """``json.loads(text)`` without its two Python layers per call: a warm look parses one
    cached row per file. Anything but one compact JSON value goes through ``json.loads``."""
    try:
        value, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError:
        return json.loads(text)  # leading white space parses there; damage raises there
    return value if end == len(text) else json.loads(text)


_DAMAGED = ("not a database", "malformed", "corrupt")
"""SQLite's words for a damaged file; "readonly", "disk is full", "unable to open" are not."""


def cache_error(target: Path, exc: OSError | sqlite3.Error) -> KuraError:
    """Why the stat cache cannot be used, and the fix: only a damaged file is to be deleted
    (Kura rebuilds it); a full or read-only disk is the disk's, and the cache is intact."""
    if isinstance(exc, OSError):
        return file_system_error(exc, target)
    words = str(exc)
    if any(word in words.lower() for word in _DAMAGED):
        return InvalidInput(
            f"the stat cache {str(target)!r} is damaged: {words}",
            hint="delete that file (Kura rebuilds it on the next inspection), or set "
            "KURA_CACHE_DIR to another folder",
            path=target,
        )
    return FileSystemError(
        f"cannot use the stat cache {str(target)!r}: {words}",
        hint="the cache is not damaged: set KURA_CACHE_DIR to a writable folder with free "
        "space, or free space on its disk",
        path=target,
    )


BUSY_TIMEOUT_S = 30.0


def _use_write_ahead_log(connection: sqlite3.Connection) -> None:
    """Put the cache in WAL mode (a setting kept in the file), waiting out a concurrent opener.

    SQLite answers a journal-mode switch that meets another connection with "database is
    locked" at once, without its busy timeout, so two first inspections at the same moment
    (two ``dataset add`` in parallel) would fail; the switch is retried until the other
    opener has made the file WAL, which this connection then sees."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.005
    while True:
        (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
        if str(mode).lower() == "wal":
            return
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


class StatCache:
    """Per-file facts keyed by :class:`FileKey`. Use :meth:`open` and a ``with`` block."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path

    @classmethod
    def open(cls, path: Path | None = None) -> StatCache:
        """Open (creating if needed) the cache at ``path``.

        The default is ``dataset-facts.sqlite3`` in ``kura.constants.cache_dir()``."""
        target = Path(path) if path is not None else cache_dir() / DEFAULT_NAME
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(target, timeout=BUSY_TIMEOUT_S)
            _use_write_ahead_log(connection)
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (path BLOB PRIMARY KEY, size INTEGER NOT NULL,"
                " mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, ctime_ns INTEGER NOT NULL,"
                " schema INTEGER NOT NULL, facts TEXT NOT NULL)"
            )
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {REPORTS} (slot BLOB PRIMARY KEY,"
                " inputs BLOB NOT NULL, report TEXT NOT NULL)"
            )
        except (OSError, sqlite3.Error) as exc:
            raise cache_error(target, exc) from exc
        return cls(connection, target)

    def __enter__(self) -> StatCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def get_many(self, keys: Iterable[FileKey]) -> dict[FileKey, dict[str, Any]]:
        """Facts for every key whose cached row still matches the file; misses are left out.

        Rows are fetched per folder with one range scan over the path index, which is much
        cheaper than one lookup per file; only the rows that match are parsed."""
        by_folder: dict[str, dict[bytes, FileKey]] = {}
        for key in keys:
            path = key.path
            folder = path[: path.rfind("/") + 1]  # "/" encodes to b"/" alone, so as bytes
            wanted = by_folder.get(folder)
            if wanted is None:
                wanted = by_folder[folder] = {}
            wanted[path.encode(_FS_ENCODING, _FS_ERRORS)] = key
        found: dict[FileKey, dict[str, Any]] = {}
        for folder, wanted in by_folder.items():
            prefix = folder.encode(_FS_ENCODING, _FS_ERRORS).rstrip(b"/") + b"/"
            upper = prefix[:-1] + bytes([prefix[-1] + 1])
            rows = self._db.execute(
                f"SELECT path, size, mtime_ns, inode, ctime_ns, facts FROM {TABLE}"
                " WHERE path >= ? AND path < ? AND schema = ?",
                (prefix, upper, SCHEMA_VERSION),
            )
            for path, size, mtime_ns, inode, ctime_ns, facts in rows:
                match = wanted.get(path)
                if (
                    match is not None
                    and match.size == size
                    and match.mtime_ns == mtime_ns
                    and match.inode == inode
                    and match.ctime_ns == ctime_ns
                ):
                    found[match] = _parse(facts)
        return found

    def put_many(self, entries: Mapping[FileKey, dict[str, Any]]) -> None:
        """Store facts for many files in one transaction."""
        rows = [
            (
                k.path.encode(_FS_ENCODING, _FS_ERRORS),
                k.size,
                k.mtime_ns,
                k.inode,
                k.ctime_ns,
                SCHEMA_VERSION,
                json.dumps(v, ensure_ascii=False, separators=(",", ":")),
            )
            for k, v in entries.items()
        ]
        try:
            with self._db:
                self._db.executemany(
                    f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)", rows
                )
        except sqlite3.Error as exc:
            raise cache_error(self.path, exc) from exc

    def get_report(self, slot: bytes, inputs: bytes) -> str | None:
        """The report kept in ``slot`` when it was made from ``inputs``; None otherwise."""
        try:
            row = self._db.execute(
                f"SELECT report FROM {REPORTS} WHERE slot = ? AND inputs = ?", (slot, inputs)
            ).fetchone()
        except sqlite3.Error as exc:
            raise cache_error(self.path, exc) from exc
        return None if row is None else str(row[0])

    def put_report(self, slot: bytes, inputs: bytes, report: str) -> None:
        """Keep ``report``, made from ``inputs``, as ``slot``'s (replacing the one before)."""
        try:
            with self._db:
                self._db.execute(
                    f"INSERT OR REPLACE INTO {REPORTS} VALUES (?, ?, ?)", (slot, inputs, report)
                )
        except sqlite3.Error as exc:
            raise cache_error(self.path, exc) from exc

    def move_prefix(self, old: Path | str, new: Path | str) -> int:
        """Re-key every row under folder ``old`` to the same relative path under ``new`` (after
        the folder was renamed: same inodes, sizes and mtimes). Returns the rows moved."""
        source = os.fsencode(os.fspath(old)).rstrip(b"/") + b"/"
        target = os.fsencode(os.fspath(new)).rstrip(b"/") + b"/"
        upper = source[:-1] + bytes([source[-1] + 1])
        with self._db:
            rows = self._db.execute(
                f"SELECT path, size, mtime_ns, inode, ctime_ns, schema, facts FROM {TABLE}"
                " WHERE path >= ? AND path < ?",
                (source, upper),
            ).fetchall()
            self._db.execute(f"DELETE FROM {TABLE} WHERE path >= ? AND path < ?", (source, upper))
            self._db.executemany(
                f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(target + bytes(row[0])[len(source) :], *row[1:]) for row in rows],
            )
        return len(rows)
