"""A workspace the file system refuses to write: read-only (EROFS) or full (ENOSPC).

Not root: the folder tree is made read-only with chmod (restored afterwards), which the
kernel enforces (EACCES). Root ignores chmod, so there every write primitive Kura and the
standard library reach (``os.open`` for writing, ``open``/``io.open`` in a writing mode,
``mkdir``, ``replace``, ``rename``, ``unlink``, ``rmdir``, ``chmod``) raises the errno for
a path inside the folder, as the kernel would on a read-only or full disk."""

from __future__ import annotations

import builtins
import errno
import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def kernel_enforces_chmod() -> bool:
    return os.geteuid() != 0


@contextmanager
def refused_writes(
    root: Path, monkeypatch: pytest.MonkeyPatch, code: int = errno.EROFS
) -> Iterator[None]:
    """Writes under ``root`` fail with ``code`` for the duration of the block."""
    if code in (errno.EROFS, errno.EACCES) and kernel_enforces_chmod():
        with _chmod_read_only(root):
            yield
        return
    with monkeypatch.context() as patch:
        _patch_writers(patch, Path(root).resolve(), code)
        yield


@contextmanager
def _chmod_read_only(root: Path) -> Iterator[None]:
    modes = {
        path: path.stat().st_mode for path in [root, *root.rglob("*")] if not path.is_symlink()
    }
    for path, mode in modes.items():
        path.chmod(stat.S_IMODE(mode) & ~0o222)
    try:
        yield
    finally:
        for path, mode in modes.items():
            path.chmod(stat.S_IMODE(mode))


def _opens_on_a_full_disk(code: int, path: Any, flags: int) -> bool:
    """A full disk still opens an existing file for reading and writing (the lock file);
    creating or truncating one is what it refuses."""
    return code == errno.ENOSPC and not flags & os.O_TRUNC and os.path.exists(path)


def _patch_writers(patch: pytest.MonkeyPatch, root: Path, code: int) -> None:
    def inside(path: Any) -> bool:
        if isinstance(path, int):
            return False
        target = Path(os.fsdecode(path))
        return Path(os.path.abspath(target)).is_relative_to(root)

    def refuse(path: Any) -> OSError:
        return OSError(code, os.strerror(code), os.fsdecode(path))

    def guarded(real: Any, *, nargs: int = 1) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if any(inside(arg) for arg in args[:nargs]):
                raise refuse(next(a for a in args[:nargs] if inside(a)))
            return real(*args, **kwargs)

        return call

    real_os_open, real_open = os.open, builtins.open

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & _WRITE_FLAGS and inside(path) and not _opens_on_a_full_disk(code, path, flags):
            raise refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def py_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(c in mode for c in "wax+") and inside(file):
            raise refuse(file)
        return real_open(file, mode, *args, **kwargs)

    patch.setattr(os, "open", os_open)
    patch.setattr(builtins, "open", py_open)
    patch.setattr(io, "open", py_open)
    patch.setattr(os, "mkdir", guarded(os.mkdir))
    if code == errno.ENOSPC:
        return  # a full disk still removes and renames
    for name in ("unlink", "remove", "rmdir", "chmod"):
        patch.setattr(os, name, guarded(getattr(os, name)))
    for name in ("replace", "rename"):
        patch.setattr(os, name, guarded(getattr(os, name), nargs=2))
