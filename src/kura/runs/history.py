"""Evidence from past runs: what happened to the same model on the same GPU class.

Every attempt of every run is evidence: its configuration (what that attempt actually ran:
a relaunch's applied contingency is undone for the attempts before it), its outcome, its
peak memory if the GPU was read, its measured speed. Facts are credited to the GPU the
attempt actually ran on (read on the step's machine, ``state.gpu``), not to the plan; an
attempt whose GPU could not be read counts for out-of-memory evidence on the planned class
(a conservative reading) but never recalibrates speed.

A plan uses the evidence three times: the median measured/estimated step time from
attempts on a known GPU of the planned class recalibrates the estimate (a ratio outside
:data:`RATIO_BOUNDS` is reported and ignored, not believed); the caching steps' measured
durations (the step records' start and finish) over the durations their plans estimated
recalibrate those steps the same way, step by step (:func:`step_duration_factors`: the
ratio carries the item count and resolution the estimate scaled by); and a configuration
that ran out of memory on this GPU class is never called fitting, whatever later attempts
did.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.runs.store import list_run_ids
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.schema.state import RunState

__all__ = [
    "CALIBRATED_STEP_KINDS",
    "RATIO_BOUNDS",
    "PastRun",
    "ladder_config",
    "past_runs",
    "step_duration_factors",
    "step_time_factor",
]

CALIBRATED_STEP_KINDS = ("cache",)
"""Step kinds whose whole measured duration recalibrates the plan's estimate of them
(training recalibrates by seconds per step; sampling happens inside the training step)."""

RATIO_BOUNDS = (1 / 3, 3.0)
"""Measured/estimated step-time ratios believed; outside, the measurement is not evidence
(a 13× "speed-up" on a machine without the planned GPU)."""


@dataclass(frozen=True)
class PastRun:
    """One attempt of one past run."""

    run_id: str
    status: str
    diagnosis: str | None
    config: dict[str, Any]
    estimated_step: float | None
    measured_step: float | None
    attempt: int = 1
    planned_gpu: str | None = None
    gpu: str | None = None
    """The GPU class the attempt actually ran on; None when it could not be read."""
    gpu_source: str | None = None
    peak_gib: float | None = None
    step_seconds: dict[str, float] = field(default_factory=dict)
    """Measured seconds of each caching step that succeeded in this attempt."""
    estimated_step_seconds: dict[str, float] = field(default_factory=dict)
    """What the run's plan estimated for those steps."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "attempt": self.attempt,
            "status": self.status,
            "diagnosis": self.diagnosis,
            "config": self.config,
            "planned_gpu": self.planned_gpu,
            "gpu": self.gpu,
            "gpu_source": self.gpu_source,
            "peak_gib": self.peak_gib,
            "estimated_step_seconds": self.estimated_step,
            "measured_step_seconds": self.measured_step,
            "measured_cache_seconds": dict(self.step_seconds),
            "estimated_cache_seconds": dict(self.estimated_step_seconds),
        }


def ladder_config(config: dict[str, Any]) -> dict[str, Any]:
    """The part of backend.config that was set (for comparing configurations): every key
    whose value is not off, since any of them can move memory."""
    return {k: v for k, v in sorted(config.items()) if v not in (None, False, 0)}


def _load(path: Path) -> Any:
    from kura.bounded import load_json

    return load_json(path)


def past_runs(workspace: Workspace, *, exclude: str, base: str, gpu: str) -> list[PastRun]:
    """Every attempt of launched runs of ``base`` that ran (or, GPU unknown, were planned)
    on ``gpu``, oldest first."""
    from kura.errors import KuraError

    found: list[PastRun] = []
    for run_id in list_run_ids(workspace):
        run_dir = workspace.run_dir(run_id)
        if run_id == exclude or not (run_dir / "state.json").exists():
            continue
        try:
            found += _kept_attempts(workspace, run_id, base)
        except (KuraError, OSError, ValueError, KeyError, TypeError):
            continue  # a damaged record is no evidence
    return [r for r in found if (r.gpu or r.planned_gpu) == gpu] + _imported(
        workspace, base=base, gpu=gpu
    )


def _kept_attempts(workspace: Workspace, run_id: str, base: str) -> list[PastRun]:
    """:func:`_attempts` of a finished run, kept in this process while the files it reads
    keep their stat stamps: a sweep worker plans every trial against every earlier trial,
    and a finished run's evidence changes only when one of them is written again."""
    from kura.execution.state import TERMINAL

    run_dir = workspace.run_dir(run_id)
    stamps = _stamps(run_dir)
    key = (str(run_dir), base)
    kept = _KEPT.get(key)
    if kept is not None and kept[0] == stamps:
        return kept[1]
    found = _attempts(workspace, run_id, base)
    # none found: another model's run (its approval says so); else the last is its state now
    if not found or found[-1].status in TERMINAL:
        _KEPT[key] = (stamps, found)
    return found


_Stamps = tuple[tuple[int, int, int, int] | None, ...]
_KEPT: dict[tuple[str, str], tuple[_Stamps, list[PastRun]]] = {}


def _stamps(run_dir: Path) -> _Stamps:
    """What changes when a run's evidence may: its plan, approval, state and attempts."""
    out: list[tuple[int, int, int, int] | None] = []
    for path in ("plan.json", "approval.json", "state.json", "attempts"):
        try:
            info = (run_dir / path).stat()
        except FileNotFoundError:
            out.append(None)
            continue
        out.append((info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns))
    return tuple(out)


def _attempts(workspace: Workspace, run_id: str, base: str) -> list[PastRun]:
    from kura.backends.registry import get_backend
    from kura.execution.state import read_state_file
    from kura.execution.summary import run_summary

    run_dir = workspace.run_dir(run_id)
    plan = _load(run_dir / "plan.json")
    approval = _load(run_dir / "approval.json")
    approved = approval.get("run_yaml", {})
    if approved.get("model", {}).get("base") != base:
        return []
    backend = get_backend(approved.get("backend", {}).get("name", "musubi-tuner"))
    final = dict(approved.get("backend", {}).get("config", {}))
    applied = {int(a["attempt"]): a["change"] for a in plan.get("attempts", [])}
    estimated = plan.get("estimate", {}).get("estimated_step_seconds") or plan.get(
        "estimate", {}
    ).get("step_seconds")
    planned = plan.get("gpu", {}).get("id")
    estimated_steps = {
        str(step["step"]): float(step["seconds"])
        for step in plan.get("estimate", {}).get("steps") or []
        if step.get("kind") in CALIBRATED_STEP_KINDS and step.get("seconds")
    }
    states: list[tuple[RunState, float | None]] = []
    for path in sorted((run_dir / "attempts").glob("*.json"), key=lambda p: int(p.stem)):
        states.append((read_state_file(path), None))
    summary = run_summary(run_dir, progress=backend.progress)
    current = read_state_file(run_dir / "state.json")
    states.append((current, summary.progress.seconds_per_step if summary.progress else None))
    out = []
    for state, measured in states:
        config = _config_of(final, applied, state.attempt)
        gpu = state.gpu or {}
        peaks = [s.get("process_gib") or s.get("used_gib") for s in state.gpu_samples]
        out.append(
            PastRun(
                run_id=run_id,
                status=state.status,
                diagnosis=(state.diagnosis or {}).get("code"),
                config=ladder_config(config),
                estimated_step=estimated,
                measured_step=measured,
                attempt=state.attempt,
                planned_gpu=planned,
                gpu=gpu.get("gpu_class"),
                gpu_source=gpu.get("source"),
                peak_gib=max((p for p in peaks if p is not None), default=None),
                step_seconds=_durations(state, estimated_steps),
                estimated_step_seconds=estimated_steps,
            )
        )
    return out


def _durations(state: RunState, names: dict[str, float]) -> dict[str, float]:
    """Seconds from start to finish of each step in ``names`` this attempt ran to success."""
    out: dict[str, float] = {}
    for record in state.steps:
        if record.name not in names or record.status != "succeeded":
            continue
        if not (record.started_at and record.finished_at):
            continue
        began = datetime.fromisoformat(record.started_at.replace("Z", "+00:00"))
        ended = datetime.fromisoformat(record.finished_at.replace("Z", "+00:00"))
        if ended > began:
            out[record.name] = (ended - began).total_seconds()
    return out


def step_duration_factors(runs: list[PastRun], gpu: str | None = None) -> dict[str, float]:
    """Per caching step: the median of measured / estimated seconds over attempts that ran
    it to success on a GPU that was read (of class ``gpu`` when given), ratios within
    :data:`RATIO_BOUNDS` only (as :func:`step_time_factor`)."""
    low, high = RATIO_BOUNDS
    ratios: dict[str, list[float]] = {}
    for r in runs:
        if r.gpu is None or (gpu is not None and r.gpu != gpu):
            continue
        for name, measured in r.step_seconds.items():
            estimated = r.estimated_step_seconds.get(name)
            if estimated and low <= measured / estimated <= high:
                ratios.setdefault(name, []).append(measured / estimated)
    return {name: statistics.median(values) for name, values in sorted(ratios.items())}


def _imported(workspace: Workspace, *, base: str, gpu: str) -> list[PastRun]:
    """Runs made outside Kura (``kura run import-aitk``) of ``base`` on ``gpu``."""
    from kura.runs.imported import imported_runs

    return [
        PastRun(
            run_id=str(r["id"]),
            status=str(r["status"]),
            diagnosis=None,
            config=ladder_config(dict(r.get("config") or {})),
            estimated_step=None,
            measured_step=r.get("seconds_per_step"),
            planned_gpu=r.get("gpu"),
            gpu=r.get("gpu"),
            gpu_source="given at import (kura run import-aitk --gpu)",
        )
        for r in imported_runs(workspace)
        if r.get("bundle") == base and r.get("gpu") == gpu
    ]


def _config_of(final: dict[str, Any], applied: dict[int, Any], attempt: int) -> dict[str, Any]:
    """backend.config as ``attempt`` ran it: the final config with every change applied for
    a later attempt undone, newest first."""
    config = dict(final)
    for later in sorted((a for a in applied if a > attempt), reverse=True):
        for key, change in applied[later].items():
            config[key] = change.get("from")
    return config


def step_time_factor(runs: list[PastRun], gpu: str | None = None) -> float | None:
    """Median of measured / estimated seconds per step over attempts that ran on a GPU that
    was read (of class ``gpu`` when given) and whose ratio is within :data:`RATIO_BOUNDS`."""
    low, high = RATIO_BOUNDS
    ratios = [r for r in _ratios(runs, gpu) if low <= r <= high]
    return statistics.median(ratios) if ratios else None


def ignored_ratios(runs: list[PastRun], gpu: str | None = None) -> list[dict[str, Any]]:
    """Measurements that were not used for recalibration, and why."""
    low, high = RATIO_BOUNDS
    out = []
    for r in runs:
        if not (r.measured_step and r.estimated_step):
            continue
        if r.gpu is None:
            out.append({"run": r.run_id, "attempt": r.attempt, "why": "its GPU was not read"})
        elif gpu is not None and r.gpu != gpu:
            out.append({"run": r.run_id, "attempt": r.attempt, "why": f"it ran on {r.gpu}"})
        else:
            ratio = r.measured_step / r.estimated_step
            if not low <= ratio <= high:
                out.append(
                    {
                        "run": r.run_id,
                        "attempt": r.attempt,
                        "why": f"measured/estimated ×{ratio:.2f} is outside "
                        f"×{low:.2f}–×{high:.0f}: not believed",
                    }
                )
    return out


def _ratios(runs: list[PastRun], gpu: str | None) -> list[float]:
    return [
        r.measured_step / r.estimated_step
        for r in runs
        if r.measured_step
        and r.estimated_step
        and r.measured_step > 0
        and r.gpu is not None
        and (gpu is None or r.gpu == gpu)
    ]
