"""The state of one run: ``runs/<id>/state.json``, always written atomically.

A run moves ``queued → caching → training → succeeded | failed | cancelled``; terminal
states never change again (a relaunch starts a new attempt and archives the old state
under ``attempts/``). Writers take a short flock on ``.state.lock`` so the supervisor
and a ``kura run cancel`` never interleave a read-modify-write.

The state is also the re-attach record: it names the supervisor (pid plus its kernel
start time, so a recycled pid is not mistaken for it) and the running step's process
group. :func:`refresh_state` settles a run whose supervisor vanished.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Literal

from kura.errors import InvalidInput, StateConflict
from kura.fsutil import atomic_write_text
from kura.locking import hold_lock
from kura.schema.state import (
    ACTIVE,
    TERMINAL,
    RunState,
    RunStatus,
    StepState,
    now_iso,
    state_adapter,
)

__all__ = [
    "ACTIVE",
    "TERMINAL",
    "RunState",
    "RunStatus",
    "StepState",
    "archive_state",
    "cancel_marker",
    "exit_file",
    "new_state",
    "now_iso",
    "read_state",
    "read_state_file",
    "state_path",
    "update_state",
    "write_state",
]

_LEADING_KEYS = ("schema_version", "run_id", "status", "attempt", "executor", "host")


def state_path(run_dir: Path) -> Path:
    return Path(run_dir) / "state.json"


def cancel_marker(run_dir: Path) -> Path:
    """A file whose presence means "cancel was asked for"; written before any signal."""
    return Path(run_dir) / ".cancel"


def exit_file(run_dir: Path, step: str) -> Path:
    """Where the supervisor records a step's exit status before it touches state.json."""
    return Path(run_dir) / "logs" / f"{step}.exit"


def new_state(
    run_id: str,
    run_dir: Path,
    executor: Literal["host", "docker", "skypilot"],
    steps: list[str],
    pass_env: list[str],
    attempt: int = 1,
) -> RunState:
    stamp = now_iso()
    logs = Path(run_dir) / "logs"
    return RunState(
        run_id=run_id,
        executor=executor,
        host=socket.gethostname(),
        attempt=attempt,
        pass_env=list(pass_env),
        created_at=stamp,
        updated_at=stamp,
        steps=[StepState(name=name, log=str(logs / f"{name}.log")) for name in steps],
    )


def read_state(run_dir: Path) -> RunState:
    """Read and validate state.json; damage is :class:`InvalidInput` naming the file."""
    return read_state_file(state_path(run_dir))


def read_state_file(path: Path) -> RunState:
    """A state document (``state.json`` or an archived ``attempts/<n>.json``)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StateConflict(
            f"{path} does not exist",
            hint="this run has not been launched; start it with `kura run launch`",
            path=path,
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}", path=path) from None
    from pydantic import ValidationError

    from kura.bounded import parse_json
    from kura.schema.base import describe_validation

    relaunch = (
        "Kura alone writes this file; restore it from a backup, or relaunch the run "
        "with `kura run relaunch` to start a new attempt"
    )
    try:
        parse_json(raw, path)  # bounded: nesting, integer length, strict JSON
    except InvalidInput as exc:
        raise InvalidInput(exc.message, hint=relaunch, path=path) from None
    try:
        return state_adapter().validate_json(raw)
    except ValidationError as exc:
        raise InvalidInput(
            f"{path} is damaged or was edited by hand: {describe_validation(exc)}",
            hint=relaunch,
            path=path,
        ) from None
    except ValueError as exc:
        raise InvalidInput(
            f"{path} is damaged or was edited by hand: {exc}",
            hint="Kura alone writes this file; restore it from a backup, or relaunch the run "
            "with `kura run relaunch` to start a new attempt",
            path=path,
        ) from None


def write_state(run_dir: Path, state: RunState) -> None:
    state.updated_at = now_iso()
    data = asdict(state)
    ordered = {key: data.pop(key) for key in _LEADING_KEYS} | data
    text = json.dumps(ordered, indent=2) + "\n"
    atomic_write_text(state_path(run_dir), text)


def update_state(run_dir: Path, change: Callable[[RunState], None]) -> RunState:
    """Read, change and write state.json under ``.state.lock``; returns the new state."""
    with hold_lock(Path(run_dir) / ".state.lock", timeout=30):
        state = read_state(run_dir)
        change(state)
        write_state(run_dir, state)
        return state


def archive_state(run_dir: Path) -> int:
    """Move a finished attempt's state to ``attempts/<n>.json``; returns that attempt number."""
    state = read_state(run_dir)
    target = Path(run_dir) / "attempts" / f"{state.attempt}.json"
    atomic_write_text(target, state_path(run_dir).read_text(encoding="utf-8"))
    return state.attempt
