"""Values the web pages derive from files, kept while those files are unchanged.

Every page used to re-read and re-parse ``run.yaml`` (round-trip YAML, tens of
milliseconds) and everything else a run page shows. A value here is stored with the
signature of the files it was computed from — path, ``mtime_ns``, size and inode of each
(Kura replaces files atomically, so a rewrite gets a new inode even within one mtime tick)
— and is recomputed as soon as any of them differs. Checking costs one ``stat`` per file.
"""

from __future__ import annotations

import copy
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

__all__ = ["FileCache", "FileSignature", "signature_of", "tree_signature"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FileSignature:
    """What identifies one version of a file without reading it; ``size`` is -1 when the
    file is absent (so its appearing changes the signature)."""

    path: str
    mtime_ns: int
    size: int
    inode: int


def signature_of(path: Path | str) -> FileSignature:
    try:
        info = os.stat(path)
    except OSError:
        return FileSignature(os.fspath(path), 0, -1, 0)
    return FileSignature(os.fspath(path), info.st_mtime_ns, info.st_size, info.st_ino)


def tree_signature(folder: Path) -> tuple[FileSignature, ...]:
    """Signatures of ``folder`` itself and every file and folder below it, sorted."""
    found = [signature_of(folder)]
    stack = [os.fspath(folder)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found.append(FileSignature(entry.path, info.st_mtime_ns, info.st_size, info.st_ino))
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return tuple(sorted(found, key=lambda s: s.path))


class FileCache:
    """A bounded, thread-safe map from a key to ``(signature, value)``.

    Values are handed out as deep copies, so a caller that edits what it got cannot change
    what the next request sees; ``frozen=True`` is for values that cannot be edited (frozen
    dataclasses of tuples), handed out as they are: a page of hundreds of rows copies none."""

    def __init__(self, limit: int = 256, *, frozen: bool = False) -> None:
        self._items: OrderedDict[Hashable, tuple[tuple[FileSignature, ...], object]] = OrderedDict()
        self._limit = limit
        self._copy = _same if frozen else copy.deepcopy
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, signature: Iterable[FileSignature], compute: Callable[[], T]) -> T:
        """The value for ``key`` computed while the files had ``signature``; computed now
        (and kept) when there is none or the files changed."""
        current = tuple(signature)
        with self._lock:
            held = self._items.get(key)
            if held is not None and held[0] == current:
                self._items.move_to_end(key)
                self.hits += 1
                return cast(T, self._copy(held[1]))
        value = compute()
        with self._lock:
            self.misses += 1
            self._items[key] = (current, self._copy(value))
            self._items.move_to_end(key)
            while len(self._items) > self._limit:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _same(value: T) -> T:
    return value
