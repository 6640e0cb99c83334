"""`kura run plan`: compile, estimate, fit, and render one review (``plan.md``).

The fit ladder's choice is written into run.yaml's ``backend.config`` (only the keys the
ladder manages, each with its reason); recipe-touching options are presented, never applied.
A plan on a GPU with headroom carries no memory aid. The plan also names its contingency
(what to do on an OOM), the time and cost, the downloads still needed, and the regrets that
match this run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kura.fsutil import atomic_write_text
from kura.runs.compile import CompileReport, compile_in_workspace
from kura.runs.context import RunContext, load_context
from kura.runs.plan_render import render
from kura.runs.store import load_run, run_file
from kura.workspace import Workspace
from kura.yamlio import write_yaml

if TYPE_CHECKING:
    from kura.backends.base import Evaluation, PlanFit, PlanInputs

__all__ = ["PLAN_JSON", "PLAN_NAME", "PlanReport", "plan_inputs", "plan_run"]

PLAN_NAME = "plan.md"
PLAN_JSON = "plan.json"
LADDER_REASON = "fit ladder"
KURA_REASONS = (LADDER_REASON, "adapter default")
"""Reasons Kura wrote; a key with any other reason was set by a person and stays as it is."""


@dataclass(frozen=True)
class PlanReport:
    run_id: str
    gpu: dict[str, Any]
    fit: dict[str, Any]
    estimate: dict[str, Any]
    evidence: dict[str, Any]
    applied: dict[str, Any]
    contingency: dict[str, Any] | None
    regrets: list[dict[str, Any]]
    downloads: dict[str, Any]
    compile: dict[str, Any]
    provenance: dict[str, str]
    plan_path: str
    plan_digest: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "run-plan",
            "run": self.run_id,
            "gpu": self.gpu,
            "fits": self.fit["fits"] and self.estimate["fits"] is not False,
            "ask_first": self.fit["ask_first"],
            "estimate": self.estimate,
            "fit": self.fit,
            "evidence": self.evidence,
            "applied": self.applied,
            "contingency": self.contingency,
            "regrets": self.regrets,
            "downloads": self.downloads,
            "compile": self.compile,
            "provenance": self.provenance,
            "plan": self.plan_path,
            "plan_digest": self.plan_digest,
        }


def plan_run(workspace: Workspace, run_id: str, *, gpu: str | None = None) -> PlanReport:
    from kura.planning.host import host_facts
    from kura.runs.gpu_choice import choose_gpu

    context = load_context(workspace, run_id)
    spec = context.spec
    gpu_class, gpu_source = choose_gpu(gpu, spec.execution.gpu_class)
    inputs = plan_inputs(workspace, context)
    host = host_facts(workspace.root)
    # This machine's RAM bounds block swap only when the plan is for this machine's GPU.
    local = gpu_source.startswith("local GPU")
    fit = context.backend.fit(
        spec, inputs, gpu_class, host_ram_gib=host.ram_total_gib if local else None
    )
    applied = _apply_ladder(workspace, context, fit) if fit.fits and not fit.ask_first else {}
    context = load_context(workspace, run_id)
    spec = context.spec
    inputs = plan_inputs(workspace, context)
    written = context.backend.estimate(spec, inputs, gpu_class)
    evidence = _evidence(workspace, context, gpu_class.id)
    contingency = context.backend.contingency(spec, inputs)
    contingency_doc = None if contingency is None else contingency.to_dict()
    compiled = compile_in_workspace(workspace, run_id)
    regrets = _last_look(workspace, context, gpu_class.id)
    downloads = _downloads(compiled)
    gpu_doc = {
        "id": gpu_class.id,
        "name": gpu_class.name,
        "memory_gib": gpu_class.memory_gib,
        "chosen_by": gpu_source,
        "usd_per_hour": _price(gpu_class),
    }
    estimate_doc = _with_evidence(estimate_document(written), evidence)
    text = render(
        spec=spec,
        gpu=gpu_doc,
        host=host.to_dict() if local else None,
        fit=dict(fit.document),
        written=estimate_doc,
        evidence=evidence,
        applied=applied,
        contingency=contingency_doc,
        regrets=regrets,
        downloads=downloads,
        compiled=compiled,
    )
    path = workspace.run_dir(run_id) / PLAN_NAME
    report = PlanReport(
        run_id=run_id,
        gpu=gpu_doc,
        fit=dict(fit.document),
        estimate=estimate_doc,
        evidence=evidence,
        applied=applied,
        contingency=contingency_doc,
        regrets=regrets,
        downloads=downloads,
        compile=compiled.to_dict(),
        provenance=dict(spec.provenance),
        plan_path=str(path),
        plan_digest="sha256:" + hashlib.sha256(text.encode()).hexdigest(),
    )
    with workspace.lock():
        atomic_write_text(path, text)
        atomic_write_text(
            path.with_name(PLAN_JSON),
            json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str) + "\n",
        )
    return report


def plan_inputs(workspace: Workspace, context: RunContext) -> PlanInputs:
    """The context's plan inputs with the run's prepared compile inputs."""
    from dataclasses import replace

    from kura.runs.compile import prepared_inputs

    compiled = prepared_inputs(workspace, context.spec, context.backend)
    return replace(context.plan_inputs, compile=compiled)


def estimate_document(written: Evaluation) -> dict[str, Any]:
    """The backend's estimate document, with every step's cost under ``steps``."""
    detail = written.detail.get("estimate")
    document: dict[str, Any] = (
        dict(detail.to_dict()) if hasattr(detail, "to_dict") else dict(written.detail)
    )
    document["steps"] = [
        {
            "step": c.step,
            "kind": c.kind,
            "peak_gib": c.peak_gib,
            "upper_gib": c.upper_gib,
            "host_ram_gib": c.host_ram_gib,
            "seconds": c.seconds,
            "fits": c.fits,
            "source": c.source,
        }
        for c in written.costs
    ]
    return document


def _apply_ladder(workspace: Workspace, context: RunContext, fit: PlanFit) -> dict[str, Any]:
    """Write the ladder's aids into backend.config; undo aids an earlier plan set that are no
    longer needed. Aids a person set (their reason is not the ladder's) are left alone."""
    from kura.spec import RunSpec, validate_spec

    run_id = context.spec.id
    with workspace.lock():
        _, document = load_run(workspace, run_id)
        known = context.backend.config_keys(context.bundle.architecture)
        config = document["backend"].setdefault("config", {})
        why = document["backend"].setdefault("reasons", {})
        changed: dict[str, Any] = {}
        for key, value in fit.settings.items():
            person_set = key in why and not str(why[key]).startswith(KURA_REASONS)
            if person_set or key not in known:
                continue
            current = config.get(key)
            if value is None or (not value and current is None) or current == value:
                continue
            config[key] = value
            changed[key] = {"from": current, "to": value}
            why[key] = fit.reasons.get(key, LADDER_REASON)
        if changed:
            validate_spec(RunSpec, document, source=run_file(workspace, run_id))
            write_yaml(run_file(workspace, run_id), document)
    return changed


def _evidence(workspace: Workspace, context: RunContext, gpu_id: str) -> dict[str, Any]:
    from kura.runs.history import ladder_config, past_runs, step_time_factor

    spec = context.spec
    runs = past_runs(workspace, exclude=spec.id, base=spec.model.base, gpu=gpu_id)
    mine = ladder_config(dict(spec.backend.config))
    ooms = [r.run_id for r in runs if r.diagnosis == "cuda_oom" and r.config == mine]
    return {
        "runs": [r.to_dict() for r in runs],
        "step_time_factor": step_time_factor(runs),
        "same_config_oom": ooms,
    }


def _with_evidence(estimate: dict[str, Any], evidence: dict[str, Any]) -> dict[str, Any]:
    """Step time scaled by what past runs measured; a configuration that already ran out of
    memory on this GPU class does not fit, whatever the estimate says."""
    out = dict(estimate)
    factor = evidence["step_time_factor"]
    if factor and out.get("step_seconds"):
        out["estimated_step_seconds"] = out["step_seconds"]
        out["step_seconds"] = round(out["step_seconds"] * factor, 3)
        if out.get("total_hours") is not None:
            out["total_hours"] = round(out["total_hours"] * factor, 3)
        out["assumptions"] = [
            *out.get("assumptions", []),
            f"step time recalibrated ×{factor:.2f} from past runs on this GPU class",
        ]
    if evidence["same_config_oom"]:
        out["fits"] = False
        out["confidence"] = (
            f"{out.get('confidence', '')}; this configuration ran out of memory on this GPU "
            f"class in run(s) {', '.join(evidence['same_config_oom'])}"
        ).lstrip("; ")
    return out


def _last_look(workspace: Workspace, context: RunContext, gpu_id: str) -> list[dict[str, Any]]:
    from kura.knowledge.regrets import matching_regrets, read_regrets

    spec = context.spec
    words = {spec.model.base, context.bundle.architecture, gpu_id, spec.training.optimizer}
    if spec.task:
        words.add(spec.task)
    words |= {k for k, v in spec.backend.config.items() if v is True}
    return [r.to_dict() for r in matching_regrets(read_regrets(workspace), words)]


def _downloads(compiled: CompileReport) -> dict[str, Any]:
    roles = compiled.lock["models"]["roles"]
    pending = {slot: r for slot, r in roles.items() if r["sha256"] == "pending"}
    sizes = [r["size"] for r in pending.values() if r["size"]]
    return {
        "files": sorted(pending),
        "bytes_known": sum(sizes),
        "sizes_unknown": len(pending) - len(sizes),
        "hint": "kura model fetch " + str(compiled.lock["models"]["bundle"]) if pending else "",
    }


def _price(gpu: Any) -> float | None:
    offer = gpu.cheapest_offer()
    return offer.usd_per_hour if offer else None
