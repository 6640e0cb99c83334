"""`kura backend list|install`: how each registered trainer gets onto this machine.

Each backend says so through its ``setup`` verb; here the list is gathered and, for a
backend Kura installs itself (KohakuMoss's virtual environment), its commands are run in
order, as argv lists (never a shell string), stopping at the first that fails.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from kura.backends.base import TrainerSetup
from kura.backends.registry import backend_names, command_backend, get_backend
from kura.backends.trainer_env import EnvLocation, write_env_record
from kura.errors import CheckFailed, Unsupported, UsageError
from kura.nextsteps import NextStep, next_list
from kura.workspace import Workspace

__all__ = [
    "BackendList",
    "BackendListEntry",
    "InstallResult",
    "install_trainer",
    "list_backends",
    "trainer_setups",
]


def trainer_setups(workspace: Workspace | None) -> tuple[TrainerSetup, ...]:
    """Every registered backend's setup, in registry order."""
    return tuple(get_backend(name).setup(workspace) for name in backend_names())


@dataclass(frozen=True)
class BackendListEntry:
    """One backend as ``kura backend list`` shows it: how its environment is made, whether
    it is there (None: Kura cannot tell without starting it), whether ``kura backend
    install`` makes it, and where (None when it lives in an image or a named checkout)."""

    name: str
    environment: str
    present: bool | None
    kura_installs: bool
    path: str | None

    @classmethod
    def of(cls, setup: TrainerSetup) -> BackendListEntry:
        return cls(
            name=setup.backend,
            environment=setup.how,
            present=setup.present,
            kura_installs=bool(setup.install),
            path=None if setup.path is None else str(setup.path),
        )

    def to_dict(self) -> dict[str, object]:
        row: dict[str, object] = {
            "name": self.name,
            "environment": self.environment,
            "present": self.present,
            "kura_installs": self.kura_installs,
        }
        if self.path is not None:
            row["path"] = self.path
        return row


@dataclass(frozen=True)
class BackendList:
    """``kura backend list``: every registered backend's setup, in registry order."""

    backends: tuple[BackendListEntry, ...]
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "backend-list"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "backends": [entry.to_dict() for entry in self.backends],
            "next": next_list(*self.next),
        }


def list_backends(workspace: Workspace | None) -> BackendList:
    """:func:`trainer_setups` as ``kura backend list`` reports them."""
    return BackendList(tuple(BackendListEntry.of(setup) for setup in trainer_setups(workspace)))


@dataclass(frozen=True)
class InstallResult:
    """What ``kura backend install`` did (the ``backend-install`` document)."""

    setup: TrainerSetup
    installed: bool
    commands: tuple[tuple[str, ...], ...]

    kind = "backend-install"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "backend": self.setup.backend,
            "path": str(self.setup.path),
            "source": self.setup.source,
            "checkout": None if self.setup.checkout is None else str(self.setup.checkout),
            "python": self.setup.python,
            "installed": self.installed,
            "commands": [list(argv) for argv in self.commands],
        }


def install_trainer(
    workspace: Workspace | None,
    name: str,
    *,
    python: str | None,
    source: Path | None = None,
    force: bool,
    announce: Callable[[str], None],
) -> InstallResult:
    """Make ``name``'s environment (nothing when it is there, unless ``force``), from the
    trainer's ``source`` checkout where it installs from one; a backend Kura does not
    install is a KuraError saying how that trainer is installed instead. The environment's
    record (``kura-env.json``) is written last, so an install that stopped half-way is
    never taken for a finished one."""
    backend = command_backend(name)
    setup = backend.setup(workspace, python=python, source=source)
    if setup.needs_source and not (setup.present and not force):
        raise UsageError(
            f"{backend.title} installs from a checkout of its source at {backend.release}: "
            "name one with --source",
            hint=f"`kura backend install {name} --source DIR`, DIR a checkout at "
            f"{backend.release}; how it comes: {setup.how}",
        )
    if setup.needs_source:
        return InstallResult(setup, installed=False, commands=())
    if not setup.install or setup.path is None:
        raise Unsupported(
            f"Kura installs no environment for {backend.title}; it comes as {setup.how}",
            hint=setup.how,
        )
    if setup.present and not force:
        return InstallResult(setup, installed=False, commands=())
    announce(f"installing {backend.title} into {setup.path} ({setup.size or 'size unknown'})")
    setup.path.parent.mkdir(parents=True, exist_ok=True)
    for argv in setup.install:
        announce("$ " + " ".join(argv))
        done = _run_to_stderr(argv, announce)
        if done.returncode != 0:
            raise CheckFailed(
                f"`{' '.join(argv)}` exited {done.returncode}",
                hint="see the pip output above; rerun with --force",
                path=setup.path,
            )
    if setup.record is not None:
        write_env_record(EnvLocation(setup.path, setup.source or "default"), setup.record)
    return InstallResult(setup, installed=True, commands=setup.install)


def _run_to_stderr(
    argv: tuple[str, ...], announce: Callable[[str], None]
) -> subprocess.CompletedProcess[str]:
    """Run one install command with its output on stderr, so stdout stays the one JSON
    document: straight to the process's stderr where it is a real file, else collected and
    announced line by line (an in-process caller that captured stderr)."""
    try:
        stderr_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        stderr_fd = None
    if stderr_fd is not None:
        return subprocess.run(
            list(argv), stdin=subprocess.DEVNULL, stdout=stderr_fd, text=True, check=False
        )
    done = subprocess.run(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    for line in done.stdout.splitlines():
        announce(line)
    return done
