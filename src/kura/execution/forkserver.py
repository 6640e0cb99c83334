"""The supervisor fork server: the process a :class:`~kura.execution.supervisors.ForkServer`
starts (``python -m kura.execution.forkserver FD``).

It imports the supervisor and warms what a supervisor loads on its way through a run
(:func:`kura.execution.supervisor.warm_up`), then answers launch requests on the socket FD
until the launcher hangs up: for each, it double-forks a supervisor in the state a fresh one
starts in (:mod:`kura.execution.supervisors` says which) and replies with its pid.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import traceback
from pathlib import Path

from kura.execution.supervisors import frame, read_message

__all__ = ["serve"]

_LOG_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT


def serve(sock: socket.socket) -> None:
    """Answer launch requests until the launcher hangs up."""
    from kura.execution.supervisor import warm_up

    warm_up()

    while True:
        fds: list[int] = []
        request = read_message(sock, fds)
        if request is None:
            return
        try:
            reply: dict[str, object] = {"pid": _fork_supervisor(sock, request, fds)}
        except Exception as exc:  # the launcher raises it, naming the run
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:
                os.close(fd)  # the supervisor's copy holds the lock; this one must not
        sock.sendall(frame(reply))


def _fork_supervisor(sock: socket.socket, request: dict[str, object], fds: list[int]) -> int:
    from kura.backends.registry import get_backend

    if len(fds) != 1:
        raise ValueError(f"a request with {len(fds)} descriptors (one launch lock expected)")
    run_dir, backend = str(request["run_dir"]), str(request["backend"])
    env = request["env"]
    if not isinstance(env, dict):
        raise ValueError("a request whose environment is not a mapping")
    get_backend(backend)  # one the warm-up did not know (a plugin named since): loaded once
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
