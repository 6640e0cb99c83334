"""Process facts and signals: liveness (zombies and recycled pids count as gone), process
groups, and the environment a step starts with."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "THREAD_CAP_VARS",
    "group_alive",
    "process_alive",
    "process_start_ticks",
    "run_processes_alive",
    "signal_group",
    "signal_process",
    "step_environment",
    "thread_caps",
]

# Libraries that start one thread per core unless told otherwise; with several data loader
# workers per GPU that oversubscribes the CPU and slows training down.
THREAD_CAP_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)

# Inherited from Kura's environment so the step can find its interpreter, home folder (and the
# Hugging Face cache under it), CUDA libraries and locale. Nothing else leaks into the step.
BASE_ENV_VARS = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "TZ",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_HUB_OFFLINE",
    "VIRTUAL_ENV",
)


def process_start_ticks(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), None when unknown."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = raw[raw.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _is_zombie(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return raw[raw.rfind(")") + 2 :].startswith("Z")


def process_alive(pid: int | None, start_ticks: int | None = None) -> bool:
    """True when ``pid`` runs, is not a zombie, and (if given) started at ``start_ticks``."""
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if _is_zombie(pid):
        return False
    if start_ticks is not None:
        current = process_start_ticks(pid)
        if current is not None and current != start_ticks:
            return False
    return True


def group_alive(pgid: int | None) -> bool:
    """True while any non-zombie process of the group ``pgid`` remains."""
    if pgid is None or pgid <= 0:
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def run_processes_alive(
    supervisor_pid: int | None, supervisor_start: int | None, pgid: int | None
) -> bool:
    """True while a run's supervisor (its pid and kernel start time) or its current step's
    process group still runs: the facts of state.json that tell a live run from a dead one."""
    return process_alive(supervisor_pid, supervisor_start) or group_alive(pgid)


def signal_group(pgid: int | None, sig: signal.Signals) -> None:
    """Send ``sig`` to a process group; a group that is already gone is fine."""
    if pgid is None or pgid <= 1:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def signal_process(pid: int | None, sig: signal.Signals) -> None:
    if pid is None or pid <= 1:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def thread_caps(gpus: int, cpu_count: int | None = None) -> dict[str, str]:
    """One share of the cores per GPU for each threading library."""
    cores = cpu_count if cpu_count is not None else (os.cpu_count() or 1)
    share = str(max(1, cores // max(1, gpus)))
    return dict.fromkeys(THREAD_CAP_VARS, share)


def step_environment(
    step_env: Mapping[str, str],
    pass_env: list[str],
    gpus: int,
    parent_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a step process.

    A few basics come from Kura's environment (see ``BASE_ENV_VARS``), then the step's own
    variables, then the secrets named in ``pass_env`` (values read here, at start time,
    never stored), then thread caps for any cap the step env does not already set.
    """
    parent = os.environ if parent_env is None else parent_env
    env = {name: parent[name] for name in BASE_ENV_VARS if name in parent}
    env.update(step_env)
    for name in pass_env:
        if name in parent:
            env[name] = parent[name]
    for name, value in thread_caps(gpus).items():
        if name not in step_env:
            env[name] = value
    return env
