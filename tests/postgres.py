"""A throwaway PostgreSQL server for tests: initdb + pg_ctl in a temporary folder, listening
on 127.0.0.1 at a free port, stopped and deleted afterwards. No mock database.

The server binaries come from ``pg_config --bindir``, ``/usr/lib/postgresql/*/bin`` (Debian's
``postgresql`` package) or ``PATH``. initdb refuses to run as root, so as root the server runs
as the ``postgres`` user (``runuser``). Without PostgreSQL the tests that need it skip with the
reason locally, and fail under ``CI=true`` (where .ci/run installs it).
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["PostgresServer", "postgres_server"]


def _bindir() -> Path | None:
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, check=False)
        candidate = Path(out.stdout.strip())
        if (candidate / "initdb").is_file():
            return candidate
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").is_file():
            return Path(candidate)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: .ci/run installs Debian's postgresql)")
    pytest.skip(f"{reason}; install PostgreSQL (Debian: apt-get install postgresql) to run it")


class PostgresServer:
    def __init__(self, bindir: Path, root: Path, port: int, prefix: list[str]):
        self.bindir, self.root, self.port, self.prefix = bindir, root, port, prefix
        self._names = itertools.count()

    def run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self.prefix, str(self.bindir / tool), *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def new_database(self) -> str:
        name = f"kura_{next(self._names)}"
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "kura", name)
        return f"postgresql://kura@127.0.0.1:{self.port}/{name}"


def postgres_server() -> Iterator[PostgresServer]:
    bindir = _bindir()
    if bindir is None:
        _missing("PostgreSQL's initdb/pg_ctl were not found")
    assert bindir is not None
    root = Path(tempfile.mkdtemp(prefix="kura-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            _missing("running as root and `runuser` is missing (initdb refuses root)")
        shutil.chown(root, "postgres", "postgres")
        prefix = [str(runuser), "-u", "postgres", "--"]
    port = _free_port()
    server = PostgresServer(bindir, root, port, prefix)
    data = root / "data"
    try:
        server.run("initdb", "-D", str(data), "-A", "trust", "-U", "kura", "--no-sync")
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off"
        server.run("pg_ctl", "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {exc.stderr or exc.stdout}")
    try:
        yield server
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            check=False,
            timeout=120,
        )
        shutil.rmtree(root, ignore_errors=True)
