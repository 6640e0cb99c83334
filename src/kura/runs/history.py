"""Evidence from past runs: what happened to the same model on the same GPU class.

A plan shows the runs that went before it (configuration, outcome, measured speed) and
uses them twice: measured seconds per step recalibrate the step-time estimate, and a
configuration that already ran out of memory on this GPU class is never called fitting.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any

from kura.runs.store import list_run_ids
from kura.workspace import Workspace

__all__ = ["PastRun", "past_runs", "step_time_factor"]


@dataclass(frozen=True)
class PastRun:
    run_id: str
    status: str
    diagnosis: str | None
    config: dict[str, Any]
    estimated_step: float | None
    measured_step: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "status": self.status,
            "diagnosis": self.diagnosis,
            "config": self.config,
            "estimated_step_seconds": self.estimated_step,
            "measured_step_seconds": self.measured_step,
        }


def ladder_config(config: dict[str, Any]) -> dict[str, Any]:
    """The part of backend.config that was set (for comparing configurations): every key
    whose value is not off, since any of them can move memory."""
    return {k: v for k, v in sorted(config.items()) if v not in (None, False, 0)}


def past_runs(workspace: Workspace, *, exclude: str, base: str, gpu: str) -> list[PastRun]:
    """Launched runs of ``base`` planned for ``gpu``, oldest first."""
    from kura.backends.registry import get_backend
    from kura.execution.summary import run_summary

    found = []
    for run_id in list_run_ids(workspace):
        run_dir = workspace.run_dir(run_id)
        if run_id == exclude or not (run_dir / "state.json").exists():
            continue
        try:
            plan = json.loads((run_dir / "plan.json").read_text(encoding="utf-8"))
            approval = json.loads((run_dir / "approval.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # a damaged record is no evidence
            continue
        approved = approval.get("run_yaml", {})
        if plan.get("gpu", {}).get("id") != gpu or approved.get("model", {}).get("base") != base:
            continue
        backend = get_backend(approved.get("backend", {}).get("name", "musubi-tuner"))
        summary = run_summary(run_dir, progress=backend.progress)
        state = summary["state"]
        progress = summary.get("progress") or {}
        found.append(
            PastRun(
                run_id=run_id,
                status=state["status"],
                diagnosis=(state.get("diagnosis") or {}).get("code"),
                config=ladder_config(approved.get("backend", {}).get("config", {})),
                estimated_step=plan.get("estimate", {}).get("step_seconds"),
                measured_step=progress.get("seconds_per_step"),
            )
        )
    return found + _imported(workspace, base=base, gpu=gpu)


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
        )
        for r in imported_runs(workspace)
        if r.get("bundle") == base and r.get("gpu") == gpu
    ]


def step_time_factor(runs: list[PastRun]) -> float | None:
    """Median of measured / estimated seconds per step over runs that measured any."""
    ratios = [
        r.measured_step / r.estimated_step
        for r in runs
        if r.measured_step and r.estimated_step and r.measured_step > 0
    ]
    return statistics.median(ratios) if ratios else None
