"""The workspace lock: one writer at a time, others wait or fail clearly.

An ``flock`` on ``.kura/lock`` is released by the kernel when its holder dies, so a crashed
Kura never leaves a stale lock. The file also records who holds it (pid, command) so the
error a waiting process gives can name the holder.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kura.constants import lock_timeout_seconds
from kura.errors import LockBusy

__all__ = ["hold_lock"]

_POLL_SECONDS = 0.05


@contextmanager
def hold_lock(lock_path: Path, *, timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` for the duration of the block.

    Waits up to ``timeout`` seconds (default ``KURA_LOCK_TIMEOUT``, 30 s) and then raises
    :class:`LockBusy` naming the holder.
    """
    wait = lock_timeout_seconds() if timeout is None else timeout
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
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
        record = json.dumps({"pid": os.getpid(), "cmd": " ".join(sys.argv[:3])}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _holder(lock_path: Path) -> str:
    try:
        info = json.loads(lock_path.read_text() or "{}")
    except (OSError, ValueError):
        return "holder unknown"
    return f"pid {info.get('pid', '?')}: {info.get('cmd', '?')}"
