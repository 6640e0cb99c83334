"""`kura run plan`: compile, estimate, fit, and render one review (``plan.md``).

The whole command runs under one hold of the workspace lock, on one
:class:`~kura.runs.snapshot.RunSnapshot` taken at its start: the datasets are validated, the
run sized, the ladder applied, estimated and compiled from it, and plan.json records the
digest of the run.yaml text they all came from.

The fit ladder's choice is written into run.yaml's ``backend.config`` (only the keys the
ladder manages, each with its reason), and the ladder's stage hands on the snapshot of the
text it wrote; recipe-touching options are presented, never applied.
A plan on a GPU with headroom carries no memory aid. The plan also names its contingency
(what to do on an OOM), the time and cost, the downloads still needed, and the regrets that
match this run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.errors import KuraError
from kura.fsutil import atomic_write_text
from kura.runs.compile import COMPILED_DIR, CompileReport, compile_in_workspace
from kura.runs.context import RunContext, context_of
from kura.runs.inputs import plan_inputs
from kura.runs.plan_render import lora_document, render
from kura.runs.snapshot import RunSnapshot, take_snapshot
from kura.runs.store import run_file
from kura.schema.cloud import SkyPilotLaunch
from kura.schema.plan import PlanCheck, PlanRecord
from kura.schema.records import read_record, record_text
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.backends.base import Evaluation, PlanFit
    from kura.dataset.registry import DatasetChecked

__all__ = [
    "PLAN_JSON",
    "PLAN_NAME",
    "PlanReport",
    "compiled_digest",
    "plan_again",
    "plan_command",
    "plan_run",
    "read_plan",
    "record_applied",
]

PLAN_NAME = "plan.md"
PLAN_JSON = "plan.json"
_PLACEHOLDER = "<plan-id>"
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
    plan_id: str = ""
    kept: dict[str, Any] | None = None
    compiled_digest: str = ""
    run_yaml_digest: str = ""
    checks: tuple[PlanCheck, ...] = ()
    dataset_files: dict[str, dict[str, str]] | None = None
    recipe: dict[str, Any] | None = None
    cloud: SkyPilotLaunch | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.record().model_dump(mode="json", exclude={"dataset_files"})

    def record(self) -> PlanRecord:
        return PlanRecord.model_validate(self._document())

    def _document(self) -> dict[str, Any]:
        return {
            "kind": "run-plan",
            "run": self.run_id,
            "plan_id": self.plan_id,
            "kept": self.kept or {},
            "plan_md_sha256": self.plan_digest.removeprefix("sha256:"),
            "compiled_digest": self.compiled_digest,
            "run_yaml_digest": self.run_yaml_digest,
            "checks": [c.model_dump() for c in self.checks],
            "cloud": None if self.cloud is None else self.cloud.model_dump(),
            "dataset_files": self.dataset_files or {},
            "next": _next_steps(self),
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
            "recipe": self.recipe,
            "plan": self.plan_path,
            "plan_digest": self.plan_digest,
        }


def _next_steps(report: PlanReport) -> list[dict[str, str]]:
    """What follows a plan: the fix of each blocking check; the download of missing model
    files and the plan again after it (an approval without the files could never launch);
    else approve (or plan for a larger GPU, or accept the risk)."""
    run_id = report.run_id
    again = plan_command(run_id, report.gpu.get("id"))
    blocking = [c for c in report.checks if c.status == "failed" and c.blocking]
    if blocking:
        return [
            {
                "command": f"kura dataset validate {c.check.removeprefix('dataset ')}",
                "why": f"{c.check} failed: {c.detail}",
            }
            if c.check.startswith("dataset ")
            else {"command": again, "why": f"{c.check}: {c.detail}"}
            if c.check == "skypilot launch"
            else {"command": f"kura run compile {run_id}", "why": f"{c.check}: {c.detail}"}
            for c in blocking
        ]
    if report.downloads.get("files"):
        missing = ", ".join(report.downloads["files"])
        return [
            {"command": report.downloads["hint"], "why": f"model files still missing: {missing}"},
            {"command": again, "why": "after the download: plan with the files' own digests"},
        ]
    fits = report.fit.get("fits") and report.estimate.get("fits") is not False
    if fits:
        return [{"command": f"kura run approve {run_id}", "why": "read plan.md, then approve"}]
    return [
        {
            "command": f"kura run plan {run_id} --gpu GPU",
            "why": "the run does not fit this GPU class: plan for a larger one "
            "(`kura gpus`) or change the recipe options plan.md lists",
        },
        {
            "command": f'kura run approve {run_id} --accept-risk "why"',
            "why": "launch it anyway, with the reason recorded in the approval",
        },
    ]


def plan_command(run_id: str, gpu: object = None) -> str:
    """``kura run plan RUN --gpu G``: the command that plans ``run_id`` again for the GPU
    class ``gpu`` (its last plan's), so a hint never re-plans for whatever GPU the machine
    that reads it happens to have (or fails on one without any)."""
    return f"kura run plan {run_id}" + (f" --gpu {gpu}" if gpu else "")


def plan_again(workspace: Workspace, run_id: str) -> str:
    """:func:`plan_command` for the GPU class of ``run_id``'s last plan, when it has a
    readable one; without one the plan's own default applies (run.yaml, then this machine)."""
    path = workspace.run_dir(run_id) / PLAN_JSON
    if not path.is_file():
        return plan_command(run_id)
    try:
        return plan_command(run_id, read_plan(workspace, run_id).gpu.get("id"))
    except KuraError:  # damaged: the command that reads it says so; plan again from scratch
        return plan_command(run_id)


def read_plan(workspace: Workspace, run_id: str) -> PlanRecord:
    """plan.json through its schema; damage names the file and the way back (plan again)."""
    return read_record(
        PlanRecord,
        workspace.run_dir(run_id) / PLAN_JSON,
        fix=f"run `kura run plan {run_id}` again (Kura writes this file)",
    )


def compiled_digest(workspace: Workspace, run_id: str) -> str:
    """sha256 over every file of ``compiled/`` (names and bytes)."""
    folder = workspace.run_dir(run_id) / COMPILED_DIR
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*")):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return "sha256:" + digest.hexdigest()


def plan_run(workspace: Workspace, run_id: str, *, gpu: str | None = None) -> PlanReport:
    """Plan run ``run_id``: one snapshot, under one hold of the workspace lock, and one look
    at its dataset folders (each listed once, each file's facts parsed once)."""
    from kura.dataset.onelook import one_look

    with workspace.lock(), one_look():
        return _plan(workspace, take_snapshot(workspace, run_id), gpu)


def _plan(workspace: Workspace, snapshot: RunSnapshot, gpu: str | None) -> PlanReport:
    from kura.planning.host import host_facts
    from kura.runs.gpu_choice import choose_gpu

    run_id = snapshot.run_id
    snapshot, datasets = _check_datasets(workspace, snapshot)  # the files as they are now
    context = context_of(snapshot)
    spec = context.spec
    gpu_class, gpu_source = choose_gpu(gpu, spec.execution.gpu_class)
    inputs = plan_inputs(workspace, context)
    # The run as written must compile before it is sized: compile's refusals name the value
    # and the fix; sizing a run the trainer would refuse could only guess (or crash).
    assert inputs.compile is not None
    context.backend.compile(spec, inputs.compile)
    host = host_facts(workspace.root)
    # This machine's RAM bounds block swap only when the plan is for this machine's GPU.
    local = gpu_source.startswith("local GPU")
    fit = context.backend.fit(
        spec, inputs, gpu_class, host_ram_gib=host.ram_total_gib if local else None
    )
    applied, kept, snapshot = (
        _apply_ladder(workspace, snapshot, context, fit)
        if fit.fits and not fit.ask_first
        else ({}, {}, snapshot)
    )
    context = context_of(snapshot)
    spec = context.spec
    inputs = plan_inputs(workspace, context)
    written = context.backend.estimate(spec, inputs, gpu_class)
    evidence = _evidence(workspace, context, gpu_class.id)
    contingency = context.backend.contingency(spec, inputs)
    contingency_doc = None if contingency is None else contingency.to_dict()
    compiled = compile_in_workspace(workspace, run_id, snapshot)
    recipe = context.backend.recipe(spec, inputs, workspace.run_dir(run_id) / COMPILED_DIR)
    regrets = _last_look(workspace, context, gpu_class.id)
    downloads = _downloads(compiled)
    gpu_doc = {
        "id": gpu_class.id,
        "name": gpu_class.name,
        "memory_gib": gpu_class.memory_gib,
        "chosen_by": gpu_source,
        "usd_per_hour": _price(gpu_class),
    }
    from kura.runs.timecost import time_and_cost

    estimate_doc = _with_evidence(estimate_document(written), evidence)
    estimate_doc["lora"] = lora_document(spec.training.network, scale=recipe.lora_scale)
    price = gpu_doc["usd_per_hour"]
    estimate_doc["time_and_cost"] = time_and_cost(
        estimate_doc, price * spec.execution.gpus if price else None
    ).to_dict()
    from kura.runs.cloud import sky_plan_checks, sky_planned_launch

    checks = _plan_checks(compiled, datasets) + sky_plan_checks(workspace, spec, gpu_class.id)
    text = render(
        spec=spec,
        gpu=gpu_doc,
        host=host.to_dict() if local else None,
        fit=dict(fit.document),
        written=estimate_doc,
        evidence=evidence,
        applied=applied,
        kept=kept,
        contingency=contingency_doc,
        regrets=regrets,
        downloads=downloads,
        compiled=compiled,
        checks=[c.model_dump() for c in checks],
        plan_id=_PLACEHOLDER,
        aid_keys=fit.aid_keys,
        recipe=recipe,
    )
    # The id is the digest of the plan's own text: the same inputs give the same plan (and
    # bytes), a different plan a different id.
    plan_id = hashlib.sha256(text.encode()).hexdigest()[:12]
    text = text.replace(_PLACEHOLDER, plan_id, 1)
    path = workspace.run_dir(run_id) / PLAN_NAME
    report = PlanReport(
        run_id=run_id,
        gpu=gpu_doc,
        fit=dict(fit.document),
        estimate=estimate_doc,
        evidence=evidence,
        applied=applied,
        kept=kept,
        contingency=contingency_doc,
        regrets=regrets,
        downloads=downloads,
        compile=compiled.to_dict(),
        provenance=dict(spec.provenance),
        plan_path=str(path),
        plan_digest="sha256:" + hashlib.sha256(text.encode()).hexdigest(),
        plan_id=plan_id,
        compiled_digest=compiled_digest(workspace, run_id),
        run_yaml_digest=snapshot.digest,
        checks=tuple(checks),
        dataset_files={name: dict(c.files) for name, c in datasets.items()},
        recipe=recipe.to_dict(),
        cloud=sky_planned_launch(workspace, spec, gpu_class.id),
    )
    record = record_text(report.record())
    if _already_written(path, record, text):
        return report  # the same plan: nothing is written (a read-only workspace plans too)
    # plan.json names plan.md's digest: a kill between these writes leaves a pair that
    # approve refuses (the two files are from different plans).
    atomic_write_text(path.with_name(PLAN_JSON), record)
    atomic_write_text(path, text)
    return report


def _already_written(path: Path, record: str, text: str) -> bool:
    """Whether plan.json and plan.md already hold exactly this plan."""
    try:
        return (
            path.with_name(PLAN_JSON).read_text(encoding="utf-8") == record
            and path.read_text(encoding="utf-8") == text
        )
    except (OSError, UnicodeDecodeError):
        return False


def record_applied(
    workspace: Workspace,
    run_id: str,
    *,
    attempt: int,
    change: dict[str, Any],
    why: str,
    run_yaml_digest: str | None = None,
) -> None:
    """After relaunch applied the approved contingency: plan.json and plan.md say what the
    next attempt actually runs (the change, from → to, and why), bound to the new compiled
    files, so the plan a person reads is the run that ran. ``run_yaml_digest`` is the digest
    of the run.yaml relaunch wrote (None: read run.yaml for it)."""
    from kura.runs.snapshot import read_run_text, text_digest

    folder = workspace.run_dir(run_id)
    entry = {"attempt": attempt, "change": change, "why": why}
    lines = ["", f"## Attempt {attempt}: what changed", ""]
    lines += [f"- {k}: {v['from']} → {v['to']} ({why})" for k, v in sorted(change.items())]
    with workspace.lock():
        plan = read_plan(workspace, run_id)
        text = (folder / PLAN_NAME).read_text(encoding="utf-8").rstrip("\n") + "\n"
        text += "\n".join(lines) + "\n"
        updated = plan.model_copy(
            update={
                "attempts": [*plan.attempts, entry],
                "plan_md_sha256": hashlib.sha256(text.encode()).hexdigest(),
                "plan_digest": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
                "compiled_digest": compiled_digest(workspace, run_id),
                "run_yaml_digest": run_yaml_digest
                or text_digest(read_run_text(workspace, run_id)[0]),
            }
        )
        atomic_write_text(folder / PLAN_JSON, record_text(updated))
        atomic_write_text(folder / PLAN_NAME, text)


def _check_datasets(
    workspace: Workspace, snapshot: RunSnapshot
) -> tuple[RunSnapshot, dict[str, DatasetChecked]]:
    """Re-inspect every dataset of the run (cheap: unchanged files come from the stat cache),
    so the lock, the checks and the verdict are about the files as they are now; the
    snapshot after it (with the facts stored where they changed)."""
    from kura.dataset.registry import validate_snapshot

    checked = {}
    for use in snapshot.spec.datasets:
        checked[use.name], dataset = validate_snapshot(workspace, snapshot.datasets[use.name])
        snapshot = snapshot.with_dataset(dataset)
    return snapshot, checked


def _plan_checks(compiled: CompileReport, datasets: dict[str, DatasetChecked]) -> list[PlanCheck]:
    checks = []
    for check in compiled.checks:
        if check["check"].startswith("dataset "):
            continue
        checks.append(
            PlanCheck(
                check=check["check"],
                status=check["status"],
                detail=check["detail"],
                blocking=check["status"] == "failed",
            )
        )
    for name, checked in datasets.items():
        files = sorted({str(p.get("path")) for p in checked.blocking})
        detail = (
            f"{len(checked.blocking)} blocking problem(s): "
            + ", ".join(f"{p.get('path')} ({p.get('code')})" for p in checked.blocking[:8])
            if checked.blocking
            else f"0 blocking problems, {len(checked.warnings)} warning(s)"
            + _trigger_note(checked.warnings)
        )
        checks.append(
            PlanCheck(
                check=f"dataset {name}",
                status="ok" if checked.ok else "failed",
                detail=detail + f" (kura dataset validate {name})",
                blocking=not checked.ok,
                files=files,
            )
        )
    return checks


def estimate_document(written: Evaluation) -> dict[str, Any]:
    """The backend's estimate document, with every step's cost under ``steps``."""
    from kura.runs.estimate import backend_estimate, cost_row

    document: dict[str, Any] = backend_estimate(written)
    document["steps"] = [cost_row(c) for c in written.costs]
    return document


def _apply_ladder(
    workspace: Workspace, snapshot: RunSnapshot, context: RunContext, fit: PlanFit
) -> tuple[dict[str, Any], dict[str, Any], RunSnapshot]:
    """Write the ladder's aids into backend.config; undo aids an earlier plan set that are no
    longer needed. Values a person set (their reason is not Kura's, or their provenance is
    "your instruction") are fixed: left alone, and returned as ``kept`` with what the ladder
    would have chosen, so the plan says so. Returns the snapshot of the run.yaml text
    written (the same snapshot when nothing changed), so no stage reads run.yaml again."""
    from kura.schema import RunSpec, validate_spec
    from kura.yamlio import dump_yaml

    spec = snapshot.spec
    kept: dict[str, Any] = {}
    known = context.backend.config_keys(context.bundle.architecture)
    changed: dict[str, Any] = {}
    for key, value in fit.settings.items():
        if key not in known:
            continue
        current = spec.backend.config.get(key)
        if _person_set(spec, key):
            if value is not None and current != value and (value or current is not None):
                kept[key] = {"yours": current, "ladder": value}
            continue
        if value is None or (not value and current is None) or current == value:
            continue
        changed[key] = {"from": current, "to": value}
    if not changed:
        return changed, kept, snapshot  # nothing to write: run.yaml is not parsed round-trip
    document = snapshot.document()
    config = document["backend"].setdefault("config", {})
    why = document["backend"].setdefault("reasons", {})
    for key, change in changed.items():
        config[key] = change["to"]
        why[key] = fit.reasons.get(key, LADDER_REASON)
    path = run_file(workspace, snapshot.run_id)
    validate_spec(RunSpec, document, source=path)
    text = dump_yaml(document)
    with workspace.lock():  # the command's own hold (reentrant): no writer came between
        atomic_write_text(path, text)
    return changed, kept, snapshot.with_run_text(text)


def _person_set(spec: Any, key: str) -> bool:
    reason = spec.backend.reasons.get(key)
    if reason is not None and not str(reason).startswith(KURA_REASONS):
        return True
    return str(spec.provenance.get(f"backend.config.{key}", "")).startswith("your instruction")


def _evidence(workspace: Workspace, context: RunContext, gpu_id: str) -> dict[str, Any]:
    """Every attempt of the runs before this one on this model and GPU class (item 5): an
    out-of-memory of this configuration is evidence even when a later attempt succeeded,
    and speed recalibrates only from attempts whose GPU was read as this class."""
    from kura.runs.history import (
        ignored_ratios,
        ladder_config,
        past_runs,
        step_duration_factors,
        step_time_factor,
    )

    spec = context.spec
    runs = past_runs(workspace, exclude=spec.id, base=spec.model.base, gpu=gpu_id)
    mine = ladder_config(dict(spec.backend.config))
    ooms = sorted({f"{r.run_id}" for r in runs if r.diagnosis == "cuda_oom" and r.config == mine})
    worked = [
        {"run": r.run_id, "attempt": r.attempt, "config": r.config}
        for r in runs
        if r.status == "succeeded" and r.config != mine
    ]
    return {
        "runs": [r.to_dict() for r in runs],
        "step_time_factor": step_time_factor(runs, gpu_id),
        "step_duration_factors": step_duration_factors(runs, gpu_id),
        "ignored_measurements": ignored_ratios(runs, gpu_id),
        "same_config_oom": ooms,
        "succeeded_configs": worked if ooms else [],
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
    durations = evidence.get("step_duration_factors") or {}
    if durations and out.get("steps"):
        out["steps"] = [_recalibrated(step, durations.get(step["step"])) for step in out["steps"]]
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


def _trigger_note(warnings: list[dict[str, Any]]) -> str:
    """The warnings a plan names itself: captions without the recorded trigger word."""
    missing = [str(w.get("path")) for w in warnings if w.get("code") == "missing-trigger"]
    if not missing:
        return ""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return f"; {len(missing)} caption(s) lack the trigger word: {shown}"


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


def _recalibrated(step: dict[str, Any], factor: float | None) -> dict[str, Any]:
    """A caching step's time scaled by what past runs measured of it on this GPU class."""
    if not factor or step.get("seconds") is None:
        return step
    return {
        **step,
        "estimated_seconds": step["seconds"],
        "seconds": round(step["seconds"] * factor, 1),
        "notes": [
            *step.get("notes", []),
            f"recalibrated ×{factor:.2f} from this step's measured durations in past runs on "
            "this GPU class",
        ],
    }


def _price(gpu: Any) -> float | None:
    offer = gpu.cheapest_offer()
    return offer.usd_per_hour if offer else None
