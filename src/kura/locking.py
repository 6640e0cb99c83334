"""The workspace lock: one writer at a time, others wait or fail clearly.

An ``flock`` on ``.kura/lock`` is released by the kernel when its holder dies, so a crashed
Kura never leaves a stale lock. The file also records who holds it (pid, command) so the
error a waiting process gives can name the holder.

A workspace this process cannot write (a read-only file system, or a lock file it may not
open for writing) is read without the lock: no writer can change it through this process,
Kura's writes are atomic renames (a reader never sees half a file), and any write the block
then attempts fails as a :class:`~kura.errors.FileSystemError` naming its path. So the
commands that only read (validate, inspect, plan where nothing changed) work there.

The lock is reentrant within one thread of one process: a command holds it once for its
whole walk (``kura run plan`` reads its snapshot, validates, compiles and writes under one
hold) and the functions it calls may take it again without waiting on themselves. A flock
is per open file, so without this a nested hold would wait on its own outer hold and then
blame "another Kura process" with this process's own pid.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kura.constants import lock_timeout_seconds
from kura.errors import LockBusy, file_system_error

__all__ = ["hold_lock"]

_POLL_SECONDS = 0.05

_held: dict[str, tuple[int, int]] = {}
"""Lock path → (pid, thread id) of the hold this process has on it now."""


@contextmanager
def hold_lock(lock_path: Path, *, timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` for the duration of the block.

    Waits up to ``timeout`` seconds (default ``KURA_LOCK_TIMEOUT``, 30 s) and then raises
    :class:`LockBusy` naming the holder. A block nested in a hold of the same thread runs at
    once (the outer hold covers it, and releases the lock when it ends).
    """
    key = os.path.realpath(lock_path)
    owner = (os.getpid(), threading.get_ident())
    if _held.get(key) == owner:
        yield
        return
    with _acquired(lock_path, timeout):
        _held[key] = owner
        try:
            yield
        finally:
            del _held[key]


@contextmanager
def _acquired(lock_path: Path, timeout: float | None) -> Iterator[None]:
    """The flock itself, taken once per outermost hold."""
    wait = lock_timeout_seconds() if timeout is None else timeout
    fd = _open_lock_file(lock_path)
    if fd is None:
        yield  # a read-only workspace: nothing can be written through this process
        return
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusy(
                        f"the workspace is locked by another Kura process ({_holder(lock_path)})",
                        hint="wait for it to finish, or raise KURA_LOCK_TIMEOUT to wait longer",
                        path=lock_path,
                    ) from None
                time.sleep(_POLL_SECONDS)
        _record_holder(fd)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _record_holder(fd: int) -> None:
    """Name this process in the lock file for a waiting process's error. The flock is the
    lock; the record only names it, so a full disk that refuses the record leaves the
    holder unnamed ("holder unknown") and the command goes on."""
    record = json.dumps({"pid": os.getpid(), "cmd": " ".join(sys.argv[:3])}).encode()
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)


def _open_lock_file(lock_path: Path) -> int | None:
    """The lock file open for writing; None where the workspace cannot be written (a
    read-only file system, or a folder this user may not write: then no write of this
    process can race another's)."""
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if _cannot_write(exc, lock_path.parent):
            return None
        raise file_system_error(exc, lock_path) from exc


def _cannot_write(exc: OSError, folder: Path) -> bool:
    if exc.errno == errno.EROFS:
        return True
    if exc.errno in (errno.EACCES, errno.EPERM) and folder.is_dir():
        return not os.access(folder, os.W_OK)
    return False


def _holder(lock_path: Path) -> str:
    try:
        info = json.loads(lock_path.read_text() or "{}")
    except (OSError, ValueError):
        return "holder unknown"
    return f"pid {info.get('pid', '?')}: {info.get('cmd', '?')}"
