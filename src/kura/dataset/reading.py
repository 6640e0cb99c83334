"""Opening dataset files safely: regular files only, within a size bound, hashed in chunks.

A dataset folder may hold anything: a ``.png`` that is a link to ``/dev/zero`` (reading it
never ends and grows until ``MemoryError``), a FIFO named ``.mp4`` (opening it blocks
forever), a 3 GiB "image". Every reader of per-file facts goes through :func:`open_regular`,
which opens without blocking, checks ``S_ISREG`` on the opened descriptor (so the check and
the read concern the same file) and refuses files over the bound for their kind.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "CHUNK",
    "MAX_CAPTION_BYTES",
    "MAX_IMAGE_BYTES",
    "MAX_VIDEO_BYTES",
    "NotReadable",
    "open_regular",
    "stream_digest",
]

MAX_IMAGE_BYTES = 256 * 1024 * 1024
"""Largest image file inspected (a 16k×16k 8-bit RGB PNG is about 200 MiB at worst)."""

MAX_VIDEO_BYTES = 16 * 1024 * 1024 * 1024
"""Largest video file inspected (hashing is streamed, so this bounds time, not memory)."""

MAX_CAPTION_BYTES = 1024 * 1024
"""Largest caption file read (real captions are a few hundred bytes; T5 reads 512 tokens)."""

CHUNK = 1 << 20


class NotReadable(Exception):
    """A file the inspection refuses to read; ``str()`` says why, for the ``error`` fact."""


@contextmanager
def open_regular(path: Path | str, *, limit: int, what: str) -> Iterator[tuple[BinaryIO, int]]:
    """``(handle, size)`` of the regular file ``path`` when it is at most ``limit`` bytes.

    Raises :class:`NotReadable` for a device, FIFO, socket or folder (opening never blocks),
    for a file over ``limit``, and for any ``OSError`` while opening."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise NotReadable(f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable(f"cannot read: not a regular file ({_kind(info.st_mode)})")
        if info.st_size > limit:
            raise NotReadable(
                f"cannot read: {_size(info.st_size)}, over the {_size(limit)} limit for {what} "
                "files"
            )
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle, info.st_size


def stream_digest(handle: BinaryIO, limit: int) -> tuple[int, str]:
    """``(bytes read, sha256 hex)`` of the rest of ``handle``, in ``CHUNK`` reads; a file
    that grew past ``limit`` while being read is :class:`NotReadable`."""
    digest = hashlib.sha256()
    size = 0
    while chunk := handle.read(CHUNK):
        size += len(chunk)
        if size > limit:
            raise NotReadable(f"cannot read: it grew past the {_size(limit)} limit while read")
        digest.update(chunk)
    return size, digest.hexdigest()


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"
