"""One look at the dataset folders for the length of one command.

A warm ``kura run plan`` asks for a dataset's files several times (the re-inspection that
checks the files, each image's size for the trainer's buckets in compile and in the
estimate, before and after the fit ladder): at 5,000 images each asked again listing the
folder and parsing 10,000 rows of the stat cache. Inside :func:`one_look` the first scan of
a folder is kept, each file is stat'ed once (its :class:`kura.dataset.statcache.FileKey`)
and its facts are taken from the cache once. Outside it nothing is kept: a long-lived
process (the web server) never holds a stale view.

So one command works on one view of the files, as it works on one snapshot of run.yaml:
the checks, the lock's digests and the trainer's bucket sizes are all about the same files;
a change made while the command runs is seen by the next one.

While a look is open Python's cyclic garbage collector does not run (see
:func:`_collection_paused`): a look keeps tens of thousands of objects alive (a scan entry,
a stat and a parsed facts dict per file) and the collector walked them again and again,
a fifth of a warm plan's time at 5,000 images. Reference counting still frees everything
that is not a cycle.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from kura.dataset.statcache import FileKey

__all__ = ["Look", "current_look", "one_look"]

T = TypeVar("T")


@dataclass
class Look:
    """What one command has already read: each path's stat, facts by the file's stat, and
    values made from the files (a folder's scan, its image sizes) by what they are of."""

    keys: dict[str, FileKey] = field(default_factory=dict)
    facts: dict[FileKey, dict[str, Any]] = field(default_factory=dict)
    derived: dict[Hashable, Any] = field(default_factory=dict)

    def once(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``'s value, computed on the first call with ``key`` in this look: for
        a value made only from the look's files (a folder's scan, its image sizes)."""
        if key not in self.derived:
            self.derived[key] = compute()
        value: T = self.derived[key]
        return value


_CURRENT: ContextVar[Look | None] = ContextVar("kura_dataset_look", default=None)


def current_look() -> Look | None:
    """The look in progress, or None outside :func:`one_look`."""
    return _CURRENT.get()


@contextmanager
def one_look() -> Iterator[Look]:
    """Keep scans and facts for the block (an enclosing look is reused)."""
    look = _CURRENT.get()
    if look is not None:
        yield look
        return
    look = Look()
    token = _CURRENT.set(look)
    try:
        with _collection_paused():
            yield look
    finally:
        _CURRENT.reset(token)


_PAUSES = threading.Lock()
_paused = 0
"""How many looks (in any thread) hold the collector paused."""
_resume = False
"""Whether the collector was enabled when the first of them paused it."""


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Pause automatic garbage collection for the block; it resumes when the last block
    open in any thread ends, and only if it was enabled when the first began.

    The collections a warm plan triggered (one full and a dozen young ones, each walking
    every live container) had almost nothing to free: what a look builds (scans, stats,
    facts parsed from JSON, report rows) holds no reference cycle, and the few hundred
    objects a plan leaves in cycles wait for the next collection after it."""
    global _paused, _resume
    with _PAUSES:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _PAUSES:
            _paused -= 1
            if _paused == 0 and _resume:
                gc.enable()
