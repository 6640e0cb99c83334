"""A run's guard: a watcher process whose verdict stops the run, wherever it runs.

Whoever owns a run from outside (a sweep worker, which holds a lease on the trial the run
carries out) may write ``runs/<id>/guard.json`` before the launch: an argv the supervisor
starts beside the steps (at once, or ``start_after_seconds`` after they begin; a run that
ends sooner never starts it), in its own session, for as long as it runs steps. The guard
decides from the outside world (a lease in a study on another machine) whether the run may
go on. Its protocol:

- it runs until the run must stop, then prints one line, the reason, and exits 0;
- any other exit (a crash, a bad argument) is a guard that can no longer watch: the run is
  stopped too, with the guard's last output as the reason, because a run nobody can vouch
  for is exactly the run that must not keep a GPU (no silent fallback to "unguarded");
- it watches its parent: when the supervisor is gone it exits, so it never outlives it.

The supervisor then stops the current step as ``kura run cancel`` does (SIGTERM to the
step's group, SIGKILL after :data:`STOP_GRACE_SECONDS`), starts no further step, and ends
the run ``cancelled`` with the guard's reason. The guard file names no secret (a storage
password reaches the guard through the supervisor's environment, never through argv).

Execution knows nothing of sweeps: the argv is the owner's (``kura.sweep.leaseguard``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kura.errors import InvalidInput
from kura.fsutil import atomic_write_text

__all__ = [
    "GUARD_FILE",
    "STOP_GRACE_SECONDS",
    "Guard",
    "GuardWatch",
    "read_guard",
    "remove_guard",
    "write_guard",
]

GUARD_FILE = "guard.json"
STOP_GRACE_SECONDS = 10.0
_REASON_LIMIT = 2000


class Guard(BaseModel):
    """``runs/<id>/guard.json``: the watcher's argv and who asked for it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: list[str] = Field(min_length=1)
    owner: str = Field(description="Who wrote it, as a person reads it (e.g. `sweep s1 trial 3`).")
    stop_grace_seconds: float = Field(STOP_GRACE_SECONDS, gt=0)
    start_after_seconds: float = Field(
        0.0,
        ge=0,
        description="How long after the steps begin the guard starts: a guard with nothing "
        "to say before then (a lease just taken) costs a run that ends sooner nothing.",
    )


def write_guard(run_dir: Path, guard: Guard) -> Path:
    path = Path(run_dir) / GUARD_FILE
    atomic_write_text(path, guard.model_dump_json(indent=2) + "\n")
    return path


def read_guard(run_dir: Path) -> Guard | None:
    """The run's guard, or None when nobody asked for one; a damaged file is InvalidInput
    (the supervisor then refuses to start the run rather than run it unguarded)."""
    path = Path(run_dir) / GUARD_FILE
    if not path.is_file():
        return None
    from kura.bounded import load_json

    try:
        return Guard.model_validate(load_json(path))
    except ValidationError as exc:
        raise InvalidInput(
            f"{path} is damaged: {exc}",
            hint="its owner (the sweep worker) writes it; remove it to run without a guard",
            path=path,
        ) from None


def remove_guard(run_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (Path(run_dir) / GUARD_FILE).unlink()


class GuardWatch:
    """The guard process (started ``start_after_seconds`` in) and the thread that waits for
    its verdict."""

    def __init__(self, guard: Guard, on_verdict: Callable[[str], None], log: Path) -> None:
        self.guard = guard
        self._on_verdict = on_verdict
        self._log = log
        self._stopping = threading.Event()
        self._starting = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._run, name="kura-guard", daemon=True)

    def start(self) -> None:
        """Start the guard now, or after its delay from a thread (a run that ends first
        never starts it)."""
        if self.guard.start_after_seconds <= 0:
            self._spawn()
        self._thread.start()

    def _spawn(self) -> bool:
        with self._starting:
            if self._stopping.is_set():
                return False
            with open(self._log, "ab") as log, open(os.devnull, "rb") as devnull:
                self._process = subprocess.Popen(
                    self.guard.argv,
                    stdin=devnull,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    start_new_session=True,
                )
            return True

    def _run(self) -> None:
        if self._process is None:
            if self._stopping.wait(self.guard.start_after_seconds):
                return
            try:
                started = self._spawn()
            except OSError as exc:
                self._on_verdict(
                    f"the run's guard ({self.guard.owner}) could not start "
                    f"({type(exc).__name__}: {exc}); stopped, since nothing can vouch for "
                    "the run any more"
                )
                return
            if not started:
                return
        self._wait()

    def _wait(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        output = process.stdout.read(_REASON_LIMIT).decode(errors="replace").strip()
        code = process.wait()
        if self._stopping.is_set():
            return
        last = output.splitlines()[-1] if output else ""
        if code == 0 and last:
            self._on_verdict(last)
        else:
            said = f": {last}" if last else ""
            self._on_verdict(
                f"the run's guard ({self.guard.owner}) exited {code}{said}; stopped, since "
                "nothing can vouch for the run any more"
            )

    def stop(self) -> None:
        """The run is over: end the guard (it has nothing left to watch)."""
        with self._starting:
            self._stopping.set()
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)
