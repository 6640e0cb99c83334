"""Kura's error tree.

Every error a user can cause carries an exit code and a hint that says what to do next.
The CLI turns them into a one-line message (or ``{"error": …}`` under ``--json``) and never
shows a traceback unless ``KURA_DEBUG=1``.

    KuraError                    exit 1
    ├── CheckFailed              exit 1   a check ran and found problems
    ├── UsageError               exit 2   the command line itself is wrong
    ├── WorkspaceNotFound        exit 3   no kura.toml above the current folder
    ├── LockBusy                 exit 4   another Kura process holds the workspace lock
    ├── InvalidInput             exit 5   a file or value Kura was given is malformed
    │   └── SpecError                     run.yaml / dataset.yaml does not match its schema
    ├── NotFound                 exit 6   a named dataset, run, model or file does not exist
    ├── Unsupported              exit 7   a valid request Kura cannot carry out (yet)
    ├── FileSystemError          exit 8   the disk refused: full, read-only, permission denied
    ├── StateConflict            exit 9   the run (or sweep) is not in a state the command needs
    ├── NetworkError             exit 10  a remote service could not be reached or answered an error
    └── RunFailed                exit 11  `run watch` followed the run to a failed end

Each code means one thing; ``tests/test_errors.py`` compares this tree with the README's table.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = [
    "CheckFailed",
    "FileSystemError",
    "InvalidInput",
    "KuraError",
    "LockBusy",
    "NetworkError",
    "NotFound",
    "RunFailed",
    "SpecError",
    "StateConflict",
    "Unsupported",
    "UsageError",
    "WorkspaceNotFound",
    "file_system_error",
]


class KuraError(Exception):
    """Base class: a message for people, a hint with the next step, an exit code."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str = "", path: Path | str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = str(path) if path is not None else None

    @property
    def type_name(self) -> str:
        """A stable, kebab-case name used as ``error.type`` in JSON output."""
        name = type(self).__name__
        return "".join(
            "-" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name)
        )

    def to_dict(self) -> dict[str, str | None]:
        return {
            "type": self.type_name,
            "message": self.message,
            "hint": self.hint,
            "path": self.path,
        }


class CheckFailed(KuraError):
    exit_code = 1


class UsageError(KuraError):
    exit_code = 2


class WorkspaceNotFound(KuraError):
    exit_code = 3


class LockBusy(KuraError):
    exit_code = 4


class InvalidInput(KuraError):
    exit_code = 5


class SpecError(InvalidInput):
    pass


class NotFound(KuraError):
    exit_code = 6


class Unsupported(KuraError):
    exit_code = 7


class FileSystemError(KuraError):
    """An operating-system error of a file operation, with its path, cause and fix."""

    exit_code = 8


class StateConflict(KuraError):
    """The command is valid, but the run is in the wrong state for it: never launched,
    still running, already ran, not planned or not approved. The hint names the command
    that applies in the state the run is in."""

    exit_code = 9


class NetworkError(KuraError):
    """A remote service (the model hub, a cloud CLI) could not be reached or refused."""

    exit_code = 10


class RunFailed(KuraError):
    """``run watch`` followed a run that ended failed: its document was printed, and the
    exit code says so to a script."""

    exit_code = 11


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_READ_ONLY = (errno.EROFS,)
_DENIED = (errno.EACCES, errno.EPERM)


def file_system_error(exc: OSError, path: Path | str | None = None) -> FileSystemError:
    """``exc`` as an error that names the path, the cause (no space, read-only, permission
    denied, or the system's own words) and the fix. Nothing already written is changed by
    a refused write: Kura writes a temporary file and renames it."""
    where = path if path is not None else (exc.filename or "a file")
    where = os.fsdecode(where) if isinstance(where, bytes) else str(where)
    if exc.errno in _NO_SPACE:
        return FileSystemError(
            f"no space left on the disk that holds {where}",
            hint="free space on that disk (or set a quota), then run the command again; "
            "the files already there are unchanged",
            path=where,
        )
    if exc.errno in _READ_ONLY:
        return FileSystemError(
            f"{where} is on a read-only file system",
            hint="remount it read-write, or copy the workspace to a writable disk; commands "
            "that only read (validate, inspect, status, list, plan where nothing changed) "
            "work on a read-only workspace",
            path=where,
        )
    if exc.errno in _DENIED:
        return FileSystemError(
            f"permission denied on {where}",
            hint="make it writable for this user (chmod/chown), or run Kura as its owner",
            path=where,
        )
    return FileSystemError(
        f"the file system refused an operation on {where}: {exc.strerror or exc}",
        hint="check the disk and the path, then run the command again",
        path=where,
    )
