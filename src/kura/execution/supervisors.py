"""Starting supervisors: a fresh interpreter per launch, or a fork server that has one warm.

A detached launch starts ``python -m kura.execution.supervisor`` (:class:`FreshSupervisors`):
Python's start-up and the import of launch.json's schema cost 150 ms of CPU on a quiet
2-core machine and several times that under load, before the run's first step. A process
that launches many runs in a row (a sweep worker starts one run per trial) can start a
:class:`ForkServer` once instead: a small process that imported the supervisor (and what
it loads on its way through a run, every backend among it) and forks it for every launch.

A forked supervisor is the same program started the same way: its own session, stdin from
``/dev/null``, stdout and stderr appended to ``logs/supervisor.log``, the run folder as its
working directory, the launch lock's descriptor inherited, and the launcher's environment
at the moment of the launch (sent with the request, so a variable the launcher set since,
such as a sweep's storage password, reaches it, and none is written to a file). It is
double-forked, so it belongs to neither the server nor the launcher and outlives both, as a
supervisor started fresh does. The server ends when its launcher closes the connection or
exits; the supervisors it forked run on.

The server (:mod:`kura.execution.forkserver`) is started as a fresh interpreter, never
forked from the launcher: a launcher may have threads (a sweep worker renews its lease on
one), and forking a threaded process copies locks other threads held. This module is the
launcher's side (and the framing both sides speak); it imports nothing of the supervisor.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

from kura.errors import CheckFailed

__all__ = [
    "ForkServer",
    "FreshSupervisors",
    "Started",
    "SupervisorStarter",
    "frame",
    "read_message",
]

_SUPERVISOR = (sys.executable, "-m", "kura.execution.supervisor")
_MESSAGE_LIMIT = 1 << 20
"""Bytes a request or reply may take (a run folder and an environment)."""


@dataclass(frozen=True)
class Started:
    """A supervisor that was started; ``process`` is set when it is this process's child
    (started fresh), so a foreground launch can wait for it."""

    pid: int
    process: subprocess.Popen[bytes] | None = None


class SupervisorStarter(Protocol):
    """Starts the supervisor of one run, handing it the held launch lock ``lock_fd``."""

    def start(self, run_dir: Path, lock_fd: int, *, backend: str) -> Started: ...


class FreshSupervisors:
    """Each supervisor is a fresh ``python -m kura.execution.supervisor`` (the default)."""

    def start(self, run_dir: Path, lock_fd: int, *, backend: str) -> Started:
        with open(run_dir / "logs" / "supervisor.log", "ab") as out, open(os.devnull, "rb") as nul:
            process = subprocess.Popen(
                [*_SUPERVISOR, str(run_dir), "--lock-fd", str(lock_fd)],
                stdin=nul,
                stdout=out,
                stderr=out,
                pass_fds=(lock_fd,),
                start_new_session=True,
                cwd=run_dir,
            )
        return Started(process.pid, process)


class ForkServer:
    """A warm supervisor to fork, for a launcher that starts many runs; use it as a context
    manager (``with ForkServer() as supervisors: launch_run(..., supervisors=supervisors)``)."""

    def __init__(self) -> None:
        self._socket: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ForkServer:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with theirs, open(os.devnull, "rb") as nul:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "kura.execution.forkserver", str(theirs.fileno())],
                stdin=nul,
                stdout=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        self._socket = ours
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the server (the supervisors it forked run on)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=10)
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait()
            self._process = None

    def start(self, run_dir: Path, lock_fd: int, *, backend: str) -> Started:
        if self._socket is None:
            raise RuntimeError("ForkServer.start outside its `with` block")
        request = {"run_dir": str(run_dir), "backend": backend, "env": dict(os.environ)}
        try:
            socket.send_fds(self._socket, [frame(request)], [lock_fd])
            reply = read_message(self._socket)
        except (OSError, ValueError) as exc:
            raise self._gone(run_dir, f"{type(exc).__name__}: {exc}") from None
        if reply is None:
            raise self._gone(run_dir, "it closed the connection")
        if "error" in reply:
            raise self._gone(run_dir, str(reply["error"]))
        return Started(int(str(reply["pid"])))

    def _gone(self, run_dir: Path, why: str) -> CheckFailed:
        code = None if self._process is None else self._process.poll()
        ended = "" if code is None else f" (it exited {code})"
        return CheckFailed(
            f"the supervisor fork server could not start the supervisor of {run_dir}{ended}: {why}",
            hint="the run was not started; launch it again (`kura run launch RUN`), or start "
            "the sweep worker again",
            path=run_dir,
        )


def frame(message: Mapping[str, object]) -> bytes:
    """A message on the socket: its length (4 bytes, big-endian), then its JSON."""
    body = json.dumps(message).encode()
    return len(body).to_bytes(4, "big") + body


def _read_exactly(sock: socket.socket, count: int, fds: list[int]) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk, received, _flags, _addr = socket.recv_fds(sock, count - len(data), 4)
        fds.extend(received)
        if not chunk:
            return None
        data += chunk
    return data


def read_message(sock: socket.socket, fds: list[int] | None = None) -> dict[str, object] | None:
    """One framed JSON message (None at the end of the connection); descriptors sent with it
    are appended to ``fds``."""
    received: list[int] = [] if fds is None else fds
    head = _read_exactly(sock, 4, received)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size > _MESSAGE_LIMIT:
        raise ValueError(f"a message of {size} bytes (the limit is {_MESSAGE_LIMIT})")
    body = _read_exactly(sock, size, received)
    if body is None:
        return None
    message = json.loads(body)
    if not isinstance(message, dict):
        raise ValueError("a message that is not a JSON object")
    return message
