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
"""

from __future__ import annotations

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
        yield look
    finally:
        _CURRENT.reset(token)
