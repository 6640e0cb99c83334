"""Starting supervisors: a fresh interpreter per launch, or a fork server that has one warm.

A detached launch starts ``python -m kura.execution.supervisor`` (:class:`FreshSupervisors`):
Python's start-up and the import of launch.json's schema cost 150 ms of CPU on a quiet
2-core machine and several times that under load, before the run's first step. A process
that launches many runs in a row (a sweep worker starts one run per trial) can start a
:class:`ForkServer` once instead: a small process that imported the supervisor (and each
backend it was asked for) and forks it for every launch.

A forked supervisor is the same program started the same way: its own session, stdin from
``/dev/null``, stdout and stderr appended to ``logs/supervisor.log``, the run folder as its
working directory, the launch lock's descriptor inherited, and the launcher's environment
at the moment of the launch (sent with the request, so a variable the launcher set since,
such as a sweep's storage password, reaches it, and none is written to a file). It is
double-forked, so it belongs to neither the server nor the launcher and outlives both, as a
supervisor started fresh does. The server ends when its launcher closes the connection or
exits; the supervisors it forked run on.

The server is started as a fresh interpreter, never forked from the launcher: a launcher
may have threads (a sweep worker renews its lease on one), and forking a threaded process
copies locks other threads held.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

from kura.errors import CheckFailed

__all__ = ["ForkServer", "FreshSupervisors", "Started", "SupervisorStarter"]

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
            socket.send_fds(self._socket, [_frame(request)], [lock_fd])
            reply = _read_message(self._socket)
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


def _frame(message: Mapping[str, object]) -> bytes:
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


def _read_message(sock: socket.socket, fds: list[int] | None = None) -> dict[str, object] | None:
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


# -- the server process ----------------------------------------------------------------------


def serve(sock: socket.socket) -> None:
    """Answer launch requests until the launcher hangs up."""
    from kura.execution.supervisor import warm_up

    warm_up()

    while True:
        fds: list[int] = []
        request = _read_message(sock, fds)
        if request is None:
            return
        try:
            reply: dict[str, object] = {"pid": _fork_supervisor(sock, request, fds)}
        except Exception as exc:  # the launcher raises it, naming the run
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:
                os.close(fd)  # the supervisor's copy holds the lock; this one must not
        sock.sendall(_frame(reply))


def _fork_supervisor(sock: socket.socket, request: dict[str, object], fds: list[int]) -> int:
    from kura.backends.registry import get_backend

    if len(fds) != 1:
        raise ValueError(f"a request with {len(fds)} descriptors (one launch lock expected)")
    run_dir, backend = str(request["run_dir"]), str(request["backend"])
    env = request["env"]
    if not isinstance(env, dict):
        raise ValueError("a request whose environment is not a mapping")
    get_backend(backend)  # warm for this fork and every later one
    # opened here, so a folder that cannot take the log is the launcher's error, not a
    # supervisor dying unseen
    log = os.open(Path(run_dir) / "logs" / "supervisor.log", _LOG_FLAGS, 0o644)
    try:
        read_end, write_end = os.pipe()
        middle = os.fork()
        if middle == 0:  # pragma: no cover (a child: it reports through the pipe, then leaves)
            os.close(read_end)
            supervisor = os.fork()
            if supervisor == 0:
                os.close(write_end)
                environment = {str(k): str(v) for k, v in env.items()}
                _become_supervisor(sock, run_dir, fds[0], log, environment)
            os.write(write_end, str(supervisor).encode())
            os._exit(0)
    finally:
        os.close(log)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        said = pipe.read()
    os.waitpid(middle, 0)
    return int(said)


_LOG_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT


def _become_supervisor(  # pragma: no cover (runs in the forked supervisor)
    sock: socket.socket, run_dir: str, lock_fd: int, log: int, env: dict[str, str]
) -> None:
    """In the forked child: the state a fresh supervisor starts in, then its ``main``."""
    code = 1
    try:
        sock.close()
        os.setsid()  # the server never changed a signal's handling: nothing to restore
        os.chdir(run_dir)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        os.environ.clear()
        os.environ.update(env)
        from kura.execution.supervisor import main

        code = main([run_dir, "--lock-fd", str(lock_fd)])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[0]))
    with sock:
        serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
