"""A step's exit status, read for a signal: a trainer killed is reported as killed.

A step stopped by a signal it did not handle exits with a negative status (``-9``: how
Python's ``subprocess`` reports it); a step behind a shell or a container runtime, or a
trainer that turns the signal into its own exit (KohakuMoss: ``SystemExit(128 + 15)``),
exits ``128 + N``. Either way the trainer reported no error of its own: someone or
something stopped it. A ``kura run cancel`` never gets here (the supervisor records it as
cancelled); this is a kill from outside Kura: the kernel's OOM killer, a shutdown, a
scheduler's preemption, ``kill``.

:func:`killed_diagnosis` turns the backend's reading of the log into that finding and
offers ``kura run resume`` when the backend finds a checkpoint to resume from (its
``resume_arguments``), else ``kura run relaunch``. Every backend gets it. A backend's own
finding that explains the kill (Musubi and AI-Toolkit read SIGKILL as a host OOM and name a
memory remedy) keeps its code and next step; the message still names the signal, and
``details.resume`` the resume command when there is a checkpoint.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kura.errors import KuraError

if TYPE_CHECKING:
    from kura.backends.base import Backend, Diagnosis

__all__ = ["SignalExit", "exit_message", "killed_diagnosis", "signal_exit"]

KILLED = "killed"
"""The diagnosis code of a step stopped by a signal."""

_UNSPECIFIC = frozenset({"unknown", "cancelled", KILLED})
"""Backend codes a signal explains better (a specific finding, an OOM in the log, stays)."""

_WHY = {
    signal.SIGKILL: "SIGKILL cannot be caught: the kernel's OOM killer sends it when host RAM "
    "runs out (`journalctl -k` or `dmesg` then shows 'Out of memory: Killed process'), as "
    "does `kill -9`",
    signal.SIGTERM: "something outside Kura asked it to stop (a shutdown, a scheduler, "
    "`kill`); `kura run cancel` is recorded as cancelled, not as this",
    signal.SIGINT: "an interrupt (Ctrl-C in the terminal that started it)",
    signal.SIGHUP: "its terminal or session went away",
    signal.SIGSEGV: "a crash in native code (a segmentation fault)",
    signal.SIGABRT: "a crash in native code (an abort)",
    signal.SIGBUS: "a crash in native code (a bus error: often a file mapped into memory "
    "changed or vanished)",
}


@dataclass(frozen=True)
class SignalExit:
    """The signal an exit status reports; ``shell``: as ``128 + N`` (not a negative status)."""

    signal: signal.Signals
    exit_code: int
    shell: bool

    @property
    def name(self) -> str:
        return self.signal.name

    def describe(self) -> str:
        """``SIGKILL (signal 9)``, with the ``128 + N`` reading when that is how it came."""
        number = int(self.signal)
        how = f"exit status {self.exit_code} = 128 + {number}" if self.shell else f"signal {number}"
        return f"{self.name} ({how})"

    def why(self) -> str:
        return _WHY.get(self.signal, f"{self.name} was sent to it")


def signal_exit(exit_code: int | None) -> SignalExit | None:
    """The signal behind ``exit_code``, or None when it is an ordinary exit status."""
    if exit_code is None or exit_code == 0:
        return None
    number, shell = (-exit_code, False) if exit_code < 0 else (exit_code - 128, True)
    if number <= 0:
        return None
    try:
        return SignalExit(signal.Signals(number), exit_code, shell)
    except ValueError:
        return None


def exit_message(step: str, exit_code: int) -> str:
    """The run's message for a failed step: killed by its signal, or its exit status."""
    found = signal_exit(exit_code)
    if found is None:
        return f"step {step} exited with status {exit_code}"
    return f"step {step} was killed by {found.describe()}"


def killed_diagnosis(
    found: Diagnosis, *, backend: Backend, run_dir: Path, exit_code: int | None
) -> Diagnosis:
    """``found`` (the backend's reading of the log) as a kill when ``exit_code`` reports a
    signal; unchanged otherwise. The next step is ``kura run resume`` when the backend has
    a checkpoint to continue from, else ``kura run relaunch``."""
    killed = signal_exit(exit_code)
    if killed is None:
        return found
    run_id = run_dir.name
    message = f"step {found.step} was killed by {killed.describe()}: {killed.why()}"
    if found.code != "unknown" and found.message:
        message += f"; {backend.title}: {found.message}"
    try:
        backend.resume_arguments(run_dir, trainer_run_dir=str(run_dir))
    except KuraError as no_state:
        following: dict[str, object] = {
            "action": "relaunch",
            "command": f"kura run relaunch {run_id}",
            "why": f"nothing to resume from ({no_state.message}): start the attempt over",
        }
    else:
        following = {
            "action": "resume",
            "command": f"kura run resume {run_id}",
            "why": f"{backend.title} saved a checkpoint before the kill: continue from it",
        }
    details = {
        **found.details,
        "signal": killed.name,
        "signal_number": int(killed.signal),
        "resume": following["command"] if following["action"] == "resume" else None,
    }
    if found.code not in _UNSPECIFIC:
        # The trainer's own finding (a host OOM read from the log or the status) keeps its
        # code and remedy; the kill is in the message and resume in the details.
        return replace(found, message=message, details=details)
    return replace(
        found,
        code=KILLED,
        message=message,
        next=following,
        exit_code=exit_code,
        details={**details, "trainer_finding": found.code},
    )
