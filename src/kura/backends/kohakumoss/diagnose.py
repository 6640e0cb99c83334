"""Diagnose a failed KohakuMoss step from its exit code and its log.

KohakuMoss exits 1 on every failure (an invalid configuration, a missing path, a missing
or stale cache, an out-of-memory step, a non-finite stop, a weights/arch mismatch) and 143
on SIGTERM (``training/shutdown.py``: SystemExit(128 + 15)), when no checkpoint or export is
written: only the last periodic checkpoint survives. Any other signal (SIGKILL: -9) kills
it where it stands, with the same result. A signal exit is ``killed`` here, before the log
is read: a log line of the killed process is not why it stopped (Kura's executor words the
kill and offers resume: ``kura.execution.exits``). The step loop does not catch
``torch.OutOfMemoryError``, so an OOM is a traceback naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["MossDiagnosis", "diagnose"]

Kind = Literal[
    "ok",
    "oom",
    "cache-miss",
    "invalid-config",
    "non-finite",
    "arch-mismatch",
    "missing-path",
    "killed",
    "failed",
]

_OOM = re.compile(r"OutOfMemoryError|CUDA out of memory|no profile fits")
_CACHE = re.compile(r"CacheMiss: (.*)")
_INVALID = re.compile(r"invalid configuration:?(.*)", re.S)
_NONFINITE = re.compile(r"FloatingPointError: (.*)")
_MISMATCH = re.compile(r"KeyError: .?checkpoint (.*?): missing")
_MISSING = re.compile(r"(\S+) does not exist")


@dataclass(frozen=True)
class MossDiagnosis:
    """What happened, what it means for the run, and the next step."""

    kind: Kind
    message: str
    hint: str


def _problem_lines(tail: str) -> str:
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip().startswith("- ")]
    return "; ".join(ln[2:] for ln in lines[:6])


def diagnose(
    step: str, returncode: int, log_tail: str, *, checkpoint: str | None = None
) -> MossDiagnosis:
    """Map ``returncode`` and the end of the log to a diagnosis naming the fix."""
    if returncode == 0:
        return MossDiagnosis("ok", f"{step} finished", "")
    saved = (
        f"the last periodic checkpoint is {checkpoint}" if checkpoint else "no checkpoint was saved"
    )
    if returncode < 0 or returncode > 128:
        signal = "SIGTERM (its exit 143)" if returncode in (143, -15) else "a signal"
        return MossDiagnosis(
            "killed",
            f"KohakuMoss writes no checkpoint or export when {signal} stops it: only its "
            f"last periodic checkpoint (SAVE_EVERY) survives; {saved}",
            "`kura run resume RUN` continues from the last periodic checkpoint "
            "(RESUME='latest'); without one, `kura run relaunch RUN` starts over",
        )
    if _OOM.search(log_tail):
        return MossDiagnosis(
            "oom",
            f"{step} ran out of device memory",
            "relaunch with the plan's next memory rung: the next-lower VRAM layer, a smaller "
            "MAX_TOKENS, or a lower MEMORY_PROFILE (`kura run relaunch RUN`)",
        )
    found = _CACHE.search(log_tail)
    if found:
        return MossDiagnosis(
            "cache-miss",
            f"{step}: the offline cache does not hold what training asks for "
            f"({found.group(1)[:300]})",
            "the cache is missing or stale: run the cache steps again (delete the run's cache/ "
            "folder and launch), and keep the data and encoder knobs of data.py equal to "
            "train.py's",
        )
    found = _NONFINITE.search(log_tail)
    if found:
        return MossDiagnosis(
            "non-finite",
            f"{step} stopped on non-finite values: {found.group(1)[:300]}",
            "lower training.learning_rate or set backend.config GRAD_CLIP; the instability/ "
            f"folder of the run holds the dumps; {saved}",
        )
    found = _MISMATCH.search(log_tail)
    if found:
        return MossDiagnosis(
            "arch-mismatch",
            f"{step}: the DiT's keys do not match the architecture KohakuMoss built",
            "the DiT's shape is read from its header; run `kura model check` on it and plan again",
        )
    found = _INVALID.search(log_tail)
    if found:
        return MossDiagnosis(
            "invalid-config",
            f"{step}: KohakuMoss refused the configuration: "
            f"{_problem_lines(found.group(1)) or found.group(1)[:300]}",
            "fix the named knob in run.yaml (backend.config or training) and plan again",
        )
    found = _MISSING.search(log_tail)
    if found:
        return MossDiagnosis(
            "missing-path",
            f"{step}: {found.group(1)} does not exist",
            "fix model.root / model.paths (or the dataset) in run.yaml and plan again",
        )
    last = [ln for ln in log_tail.splitlines() if ln.strip()][-1:] or [""]
    return MossDiagnosis(
        "failed", f"{step} failed (exit {returncode}): {last[0][:300]}", "see the step's log"
    )
