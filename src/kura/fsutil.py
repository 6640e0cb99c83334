"""Atomic file writes: a unique temporary file in the same folder, fsync, then rename.

A crash at any moment leaves either the old file or the new one, never half of either.
The temporary file is named for its writer, ``.NAME.HOST.PID.<random>.tmp``, so one left
by a writer killed with ``kill -9`` is found: the next write of ``NAME`` removes every such
file whose process on this host is gone (and a name of the older ``.NAME.<random>.tmp``
form once it is an hour old, since no current writer makes one).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import socket
import tempfile
import time
from pathlib import Path

from kura.errors import file_system_error

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "sweep_stale_temporaries",
    "write_text_if_changed",
]


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically, creating parent folders as needed. A
    refused write (disk full, read-only, permission) is a :class:`FileSystemError` naming
    ``path``; the old file, if any, is unchanged."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale_temporaries(path)
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{path.name}.{_HOST}.{os.getpid()}.", suffix=".tmp", dir=path.parent
        )
    except OSError as exc:
        raise file_system_error(exc, path) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError):
            raise file_system_error(exc, path) from exc
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, mode: int = 0o644) -> None:
    """Replace ``path`` with UTF-8 ``text`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def write_text_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` atomically unless the file already holds exactly it; say whether it
    wrote. Deterministic outputs (locks, compiled files) then keep their mtimes."""
    try:
        if Path(path).read_text(encoding="utf-8") == text:
            return False
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    atomic_write_text(path, text)
    return True


_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32] or "host"
_LEGACY_AGE_SECONDS = 3600.0


def sweep_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files of ``path`` that a killed writer left; return them.

    A temporary file of this host whose writer's process is gone is stale; one of another
    host (a shared folder) is left alone, as is one whose process still runs."""
    path = Path(path)
    prefix = f".{path.name}."
    removed: list[Path] = []
    for name in glob.glob(glob.escape(prefix) + "*.tmp", root_dir=path.parent):
        candidate = path.parent / name
        if _is_stale(name[len(prefix) : -len(".tmp")], candidate):
            with contextlib.suppress(FileNotFoundError):
                candidate.unlink()
                removed.append(candidate)
    return removed


def _is_stale(middle: str, candidate: Path) -> bool:
    parts = middle.split(".")
    if len(parts) == 1:  # the older form: no writer named, judged by its age
        try:
            return time.time() - candidate.lstat().st_mtime > _LEGACY_AGE_SECONDS
        except OSError:
            return False
    if len(parts) != 3 or parts[0] != _HOST or not parts[1].isdigit():
        return False
    return not _process_alive(int(parts[1]))


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
