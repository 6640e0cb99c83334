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
import types
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from kura.errors import InvalidInput, UsageError
from kura.fsutil import atomic_write_text
from kura.locking import hold_lock

__all__ = [
    "ACTIVE",
    "TERMINAL",
    "RunState",
    "RunStatus",
    "StepState",
    "archive_state",
    "exit_file",
    "new_state",
    "now_iso",
    "read_state",
    "state_path",
    "update_state",
    "write_state",
]

RunStatus = Literal["queued", "caching", "training", "succeeded", "failed", "cancelled"]
StepStatus = Literal["pending", "running", "succeeded", "failed", "skipped", "cancelled"]
ACTIVE: frozenset[str] = frozenset({"queued", "caching", "training"})
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
SCHEMA_VERSION = 1
_LEADING_KEYS = ("schema_version", "run_id", "status", "attempt", "executor", "host")

_ALLOWED: dict[str, frozenset[str]] = {
    "queued": frozenset({"caching", "training", "succeeded", "failed", "cancelled"}),
    "caching": frozenset({"caching", "training", "succeeded", "failed", "cancelled"}),
    "training": frozenset({"training", "succeeded", "failed", "cancelled"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}


@dataclass
class StepState:
    name: str
    log: str
    status: StepStatus = "pending"
    log_offset: int = 0
    pid: int | None = None
    pgid: int | None = None
    container: str | None = None
    exit_code: int | None = None
    started_at: str | None = None
    finished_at: str | None = None


@dataclass
class RunState:
    run_id: str
    executor: Literal["host", "docker", "skypilot"]
    host: str
    created_at: str
    updated_at: str
    schema_version: int = SCHEMA_VERSION
    status: RunStatus = "queued"
    attempt: int = 1
    supervisor_pid: int | None = None
    supervisor_start: int | None = None
    current_step: str | None = None
    pid: int | None = None
    pgid: int | None = None
    container: str | None = None
    sky_job: str | None = None
    exit_code: int | None = None
    log_path: str | None = None
    pass_env: list[str] = field(default_factory=list)
    started_at: str | None = None
    finished_at: str | None = None
    message: str | None = None
    diagnosis: dict[str, Any] | None = None
    steps: list[StepState] = field(default_factory=list)
    gpu: dict[str, Any] | None = None
    """The GPU this attempt ran on, read on the step's machine (kura.execution.gpuwatch);
    ``gpu_class`` is None when it could not be read, with why in ``source``."""
    gpu_samples: list[dict[str, Any]] = field(default_factory=list)
    """Memory in use during the attempt: ``{t, step, used_gib, process_gib}``, bounded."""

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    def step(self, name: str) -> StepState:
        for record in self.steps:
            if record.name == name:
                return record
        raise KeyError(name)

    def move_to(self, status: RunStatus) -> None:
        """Change status, refusing any move the state machine does not allow."""
        if status not in _ALLOWED[self.status]:
            raise UsageError(
                f"run {self.run_id} cannot go from {self.status} to {status}",
                hint="a finished run never changes; relaunch it to start a new attempt",
            )
        self.status = status
        stamp = now_iso()
        if status in ACTIVE and self.started_at is None and status != "queued":
            self.started_at = stamp
        if status in TERMINAL:
            self.finished_at = stamp


def now_iso() -> str:
    """The current time, ISO 8601 in UTC with a ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def state_path(run_dir: Path) -> Path:
    return Path(run_dir) / "state.json"


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
    path = state_path(run_dir)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(
            f"{path} does not exist",
            hint="this run has not been launched; start it with `kura run launch`",
            path=path,
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}", path=path) from None
    try:
        return _build(RunState, json.loads(raw), "state")
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


def _build(cls: type[Any], data: Any, where: str) -> Any:
    """Build dataclass ``cls`` from JSON data, checking every field's type (no coercion)."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object")
    hints = get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}
    extra = sorted(set(data) - set(known))
    if extra:
        raise ValueError(f"{where} has unknown keys: {', '.join(extra)}")
    values: dict[str, Any] = {}
    for name, spec in known.items():
        if name not in data:
            if spec.default is MISSING and spec.default_factory is MISSING:
                raise ValueError(f"{where}.{name} is missing")
            continue
        values[name] = _convert(data[name], hints[name], f"{where}.{name}")
    return cls(**values)


def _convert(value: Any, hint: Any, where: str) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in get_args(hint):
            try:
                return _convert(value, option, where)
            except ValueError:
                continue
        raise ValueError(f"{where} has the wrong type ({type(value).__name__})")
    if origin is Literal:
        if value in get_args(hint):
            return value
        allowed = ", ".join(map(str, get_args(hint)))
        raise ValueError(f"{where} is {value!r}, expected one of {allowed}")
    if origin is list:
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list")
        (item,) = get_args(hint)
        return [_convert(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be an object")
        return value
    if hint is type(None):
        if value is None:
            return None
        raise ValueError(f"{where} must be null")
    if hint is Any:
        return value
    if isinstance(hint, type) and hasattr(hint, "__dataclass_fields__"):
        return _build(hint, value, where)
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint is str and isinstance(value, str):
        return value
    raise ValueError(f"{where} has the wrong type ({type(value).__name__})")
