"""The one gate: `kura run approve` binds an approval to the digest of what will run.

The approval (``runs/<id>/approval.json``, schema :class:`kura.schema.approval.ApprovalRecord`)
holds the sha256 of every compiled file (the dataset TOML, the commands, the container, the
lock), of plan.md and plan.json, a copy of run.yaml as data, the contingency the plan
approved in advance, and the digest of the record itself, so an edited approval (its
contingency included) is refused like an edited plan.

Approve refuses a plan it cannot stand behind: plan.md and plan.json from different plans
(a ``run plan`` killed between its writes), compiled files changed since the plan, a
dataset whose content is no longer what the plan checked (naming the files) or whose checks
failed, and a plan that does not fit unless the person accepts the risk with a reason
(``--accept-risk "…"``, recorded in the approval).

:func:`check_gate` is what launch, relaunch and resume call **first**, before any executor,
image or trainer environment is touched: the approval record, run.yaml, every bound file,
then every locked model file (size and stat against the digest cache, re-hashed when they
differ, the header re-checked for its role) and every dataset the trainer will read.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kura.errors import CheckFailed, InvalidInput, StateConflict
from kura.runs.compile import COMPILED_DIR, LOCK_NAME, compile_in_workspace, lock_path
from kura.runs.diffs import diff_values
from kura.runs.plan import (
    PLAN_JSON,
    PLAN_NAME,
    compiled_digest,
    plan_again,
    plan_command,
    read_plan,
)
from kura.runs.snapshot import RunSnapshot, read_run_text, take_snapshot, text_digest
from kura.schema.approval import APPROVAL_NAME, AcceptedRisk, ApprovalRecord
from kura.schema.dataset import DatasetSpec
from kura.schema.lock import RunLock
from kura.schema.plan import PlanRecord
from kura.schema.records import canonical_json, parse_record, read_record, write_record
from kura.workspace import Workspace

__all__ = [
    "APPROVAL_NAME",
    "Approval",
    "approval_path",
    "approve_run",
    "check_approval",
    "check_gate",
    "read_lock",
]


@dataclass(frozen=True)
class Approval:
    run_id: str
    digest: str
    files: dict[str, str]
    approved_at: str
    approved_by: str
    plan_id: str = ""
    accepted_risk: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "run-approval",
            "run": self.run_id,
            "digest": self.digest,
            "plan_id": self.plan_id,
            "files": self.files,
            "approved_at": self.approved_at,
            "approved_by": self.approved_by,
            "accepted_risk": self.accepted_risk,
            "next": [
                {
                    "command": f"kura run launch {self.run_id}",
                    "why": "run exactly what was approved",
                }
            ],
        }


def approval_path(workspace: Workspace, run_id: str) -> Path:
    return workspace.run_dir(run_id) / APPROVAL_NAME


def _bound_files(workspace: Workspace, run_id: str) -> dict[str, bytes]:
    """The bytes of every file the approval binds (compiled/, plan.md, plan.json), each
    read once: the gate hashes them and parses plan.json and run.lock from the same bytes."""
    folder = workspace.run_dir(run_id)
    paths = [*sorted((folder / COMPILED_DIR).glob("*")), folder / PLAN_NAME, folder / PLAN_JSON]
    return {str(p.relative_to(folder)): p.read_bytes() for p in paths if p.is_file()}


def _digests(files: dict[str, bytes]) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def _file_digests(workspace: Workspace, run_id: str) -> dict[str, str]:
    return _digests(_bound_files(workspace, run_id))


def _combined(files: dict[str, str]) -> str:
    canonical = json.dumps(files, sort_keys=True).encode()
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def _record_digest(record: ApprovalRecord) -> str:
    body = record.model_dump(mode="json")
    body.pop("record_digest", None)
    return "sha256:" + hashlib.sha256(canonical_json(body).encode()).hexdigest()


def read_lock(workspace: Workspace, run_id: str) -> RunLock:
    """compiled/run.lock through its schema (damage names the file and the fix)."""
    again = plan_again(workspace, run_id)
    return read_record(RunLock, lock_path(workspace, run_id), fix=f"recompile with `{again}`")


# ---------------------------------------------------------------------------------------
# approve


def approve_run(
    workspace: Workspace,
    run_id: str,
    *,
    via: str = "plan",
    accept_risk: str | None = None,
    snapshot: RunSnapshot | None = None,
) -> Approval:
    """Approve the current plan; refuse when there is none, it is stale or torn, a dataset
    changed or failed its checks, or it does not fit (unless ``accept_risk`` says why).

    The plan's contingency (one rung up the ladder on an out-of-memory) is approved with it;
    ``via="contingency"`` records an approval made by relaunch applying that rung, which
    consumes it.

    Runs under one hold of the workspace lock, on one snapshot of run.yaml and its datasets:
    the run.yaml approved is the one whose digest plan.json records, and the one compiled;
    and one look at its dataset folders (the re-check and the compile see the same files).
    """
    from kura.dataset.onelook import one_look

    with workspace.lock(), one_look():
        found = snapshot or take_snapshot(workspace, run_id)
        return _approve(workspace, found, via, accept_risk)


def _approve(
    workspace: Workspace, snapshot: RunSnapshot, via: str, accept_risk: str | None
) -> Approval:
    run_id, spec = snapshot.run_id, snapshot.spec
    folder = workspace.run_dir(run_id)
    if not (folder / PLAN_NAME).is_file() or not (folder / PLAN_JSON).is_file():
        raise StateConflict(
            f"run {run_id} has no plan to approve",
            hint=f"run `{plan_again(workspace, run_id)}` and read plan.md first",
        )
    plan = read_plan(workspace, run_id)
    _check_plan_pair(workspace, run_id, plan)
    _check_planned_run_yaml(run_id, plan, snapshot.digest, after="since its plan was made")
    compiled = compile_in_workspace(workspace, run_id, snapshot)
    if compiled.changed or plan.compiled_digest != compiled_digest(workspace, run_id):
        raise CheckFailed(
            f"run {run_id} changed since its plan was made (the compiled commands differ)",
            hint=f"run `{plan_again(workspace, run_id)}` again, read it, then approve",
        )
    lock = read_lock(workspace, run_id)
    _check_datasets_now(workspace, snapshot, lock, plan)
    risk = _accepted_risk(run_id, plan, accept_risk) if via == "plan" else None
    files = _file_digests(workspace, run_id)
    contingency = plan.contingency if via == "plan" else None
    record = ApprovalRecord(
        run=run_id,
        digest=_combined(files),
        files=files,
        plan_id=plan.plan_id,
        approved_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        approved_by=f"{getpass.getuser()}@{socket.gethostname()}",
        via=via,
        contingency=contingency,
        accepted_risk=risk,
        run_yaml=spec.model_dump(mode="json"),
        cloud=plan.cloud,
    )
    record = record.model_copy(update={"record_digest": _record_digest(record)})
    write_record(folder / APPROVAL_NAME, record)
    return Approval(
        run_id=run_id,
        digest=record.digest,
        files=files,
        approved_at=record.approved_at,
        approved_by=record.approved_by,
        plan_id=record.plan_id,
        accepted_risk=None if risk is None else risk.model_dump(),
    )


def _check_plan_pair(workspace: Workspace, run_id: str, plan: PlanRecord) -> None:
    """plan.md and plan.json must come from one ``run plan``: plan.json names plan.md's
    digest (and plan.md shows the plan id)."""
    text = (workspace.run_dir(run_id) / PLAN_NAME).read_bytes()
    if hashlib.sha256(text).hexdigest() != plan.plan_md_sha256 or plan.plan_id.encode() not in text:
        raise CheckFailed(
            f"runs/{run_id}/plan.md and plan.json are not from the same plan (plan {plan.plan_id} "
            "in plan.json; plan.md was edited, or a `run plan` was interrupted between them)",
            hint=f"run `{plan_again(workspace, run_id)}` again, read plan.md, then approve",
        )


def _check_planned_run_yaml(run_id: str, plan: PlanRecord, digest: str, *, after: str) -> None:
    """run.yaml must be the text the plan was made from (plan.json records its digest):
    the plan a person read and the compiled files describe that run, and no other."""
    if plan.run_yaml_digest == digest:
        return
    why = (
        "its plan.json was made by an earlier Kura and records no run.yaml digest"
        if not plan.run_yaml_digest
        else f"run.yaml is now {digest[:19]}…, the plan was made from {plan.run_yaml_digest[:19]}…"
    )
    raise CheckFailed(
        f"run {run_id} changed {after} ({why})",
        hint=f"run `{plan_command(run_id, plan.gpu.get('id'))}` again, read plan.md, then approve",
    )


def _accepted_risk(run_id: str, plan: PlanRecord, reason: str | None) -> AcceptedRisk | None:
    problems = _fit_problems(plan)
    if not problems:
        return None
    if reason is None or not reason.strip():
        raise CheckFailed(
            f"run {run_id}'s plan is not known to fit: " + "; ".join(problems),
            hint="change the run (plan.md lists the options) and "
            f"`{plan_command(run_id, plan.gpu.get('id'))}` again; "
            f'or approve anyway with `kura run approve {run_id} --accept-risk "why"`',
        )
    return AcceptedRisk(reason=reason.strip(), problems=problems)


def _fit_problems(plan: PlanRecord) -> list[str]:
    problems = []
    if plan.fit.get("sizeable") is False or plan.estimate.get("fits") is None:
        steps = plan.estimate.get("steps") or []
        unsized = [
            str(s.get("step")) for s in steps if isinstance(s, dict) and s.get("fits") is None
        ]
        which = f" (not sized: {', '.join(unsized)})" if unsized else ""
        problems.append(
            f"Kura cannot size this run on {plan.gpu.get('name')}{which}: no step's memory is "
            "estimated, so nothing says it fits"
        )
    elif plan.fits is False:
        worst = plan.estimate.get("peak_vram_gib")
        usable = plan.estimate.get("usable_gib")
        detail = f" (peak {worst} GiB, usable {usable} GiB)" if worst and usable else ""
        problems.append(f"the estimate says it does not fit on {plan.gpu.get('name')}{detail}")
    if plan.evidence.get("same_config_oom"):
        problems.append(
            "this configuration ran out of memory on this GPU class before (run(s) "
            + ", ".join(plan.evidence["same_config_oom"])
            + ")"
        )
    return problems


def _check_datasets_now(
    workspace: Workspace, snapshot: RunSnapshot, lock: RunLock, plan: PlanRecord
) -> None:
    """Each dataset as it is now: the same content the plan checked, no blocking problem,
    and still read from the folder the lock names."""
    from kura.dataset.registry import validate_snapshot

    run_id = snapshot.run_id
    for entry in lock.datasets:
        dataset = snapshot.datasets[entry.name]
        _check_dataset_path(workspace, run_id, dataset.spec, entry.media, entry.control)
        checked, _ = validate_snapshot(workspace, dataset)
        if checked.digest != entry.digest:
            before = plan.dataset_files.get(entry.name)
            raise CheckFailed(
                f"dataset {entry.name} changed since the plan was made"
                + _changed_files(before, checked.files),
                hint=f"run `{plan_again(workspace, run_id)}` again (it re-checks the files), "
                "then approve",
            )
        if not checked.ok:
            raise CheckFailed(
                f"dataset {entry.name} has blocking problems: " + _problem_files(checked.blocking),
                hint=f"fix them (`kura dataset validate {entry.name}` lists each), then "
                f"`{plan_again(workspace, run_id)}` and approve",
            )
    failed = [c for c in plan.checks if c.status == "failed" and c.blocking]
    if failed:
        raise CheckFailed(
            "the plan's own checks failed: " + "; ".join(f"{c.check}: {c.detail}" for c in failed),
            hint=f"fix what they name, then `{plan_again(workspace, run_id)}` and approve",
        )


def _check_dataset_path(
    workspace: Workspace, run_id: str, spec: DatasetSpec, media: str, control: str | None
) -> None:
    from kura.dataset.registry import control_dir, media_dir

    name = spec.name
    now = str(media_dir(workspace, spec).resolve())
    now_control = control_dir(workspace, spec)
    now_control_text = None if now_control is None else str(now_control.resolve())
    if now != media or now_control_text != control:
        raise CheckFailed(
            f"dataset {name} now points at {now} but run {run_id} reads {media} (its "
            "dataset.yaml `media:`/`control:` changed after the plan)",
            hint=f"run `{plan_again(workspace, run_id)}` again, then approve",
        )


def _changed_files(before: dict[str, str] | None, after: dict[str, str]) -> str:
    if before is None:
        return ""
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    if not changed:
        return ""
    shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
    return f": {shown}"


def _problem_files(problems: list[dict[str, Any]]) -> str:
    shown = [f"{p.get('path')} ({p.get('code')})" for p in problems[:8]]
    more = len(problems) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


# ---------------------------------------------------------------------------------------
# the gate


def check_approval(
    workspace: Workspace, run_id: str, snapshot: RunSnapshot | None = None
) -> ApprovalRecord:
    """The stored approval, after checking that nothing changed since; else CheckFailed naming
    what changed and the way back (plan, then approve). ``snapshot`` is run.yaml as the
    calling command read it (launch takes one under the lock and checks that)."""
    return _checked(workspace, run_id, snapshot)[0]


def _checked(
    workspace: Workspace, run_id: str, snapshot: RunSnapshot | None
) -> tuple[ApprovalRecord, dict[str, bytes]]:
    """The approval and the bytes of the files it binds, as checked."""
    if snapshot is None:
        text, spec = read_run_text(workspace, run_id)
    else:
        text, spec = snapshot.text, snapshot.spec
    path = approval_path(workspace, run_id)

    def again() -> str:  # read plan.json for its GPU class only on the way to a refusal
        return f"`{plan_again(workspace, run_id)}`, read plan.md, then `kura run approve {run_id}`"

    if not path.exists():
        raise StateConflict(f"run {run_id} is not approved", hint=f"run {again()}")
    try:
        record = read_record(ApprovalRecord, path, fix="approve again")
    except InvalidInput as exc:
        raise CheckFailed(
            f"{path} cannot be read ({exc.message})", hint=f"approve again: {again()}", path=path
        ) from None
    if record.run != run_id or record.record_digest != _record_digest(record):
        raise CheckFailed(
            f"{path} was edited after approval (its digest does not match its content)",
            hint=f"an approval is written only by `kura run approve`: run {again()}",
            path=path,
        )
    changes = diff_values(record.run_yaml, spec.model_dump(mode="json"))
    if changes:
        raise CheckFailed(
            "run.yaml changed after approval: " + "; ".join(changes[:5]),
            hint=f"run `{plan_again(workspace, run_id)}` and approve again",
        )
    files = _bound_files(workspace, run_id)
    current = _digests(files)
    approved = record.files
    changed = sorted(
        name for name in set(current) | set(approved) if current.get(name) != approved.get(name)
    )
    if changed or _combined(current) != record.digest:
        raise CheckFailed(
            f"run {run_id} changed after approval: {', '.join(changed) or 'the approval record'}",
            hint=f"run `{plan_again(workspace, run_id)}` and approve again",
        )
    # plan.json is the approved one (its digest is bound above): its run.yaml digest holds.
    plan = parse_record(
        PlanRecord,
        files[PLAN_JSON],
        workspace.run_dir(run_id) / PLAN_JSON,
        fix=f"run `kura run plan {run_id}` again (Kura writes this file)",
    )
    _check_planned_run_yaml(run_id, plan, text_digest(text), after="after approval")
    if record.via == "plan" and (
        plan.plan_id != record.plan_id or record.contingency != plan.contingency
    ):
        raise CheckFailed(
            f"{path} does not match the plan it approved (plan id or contingency differ)",
            hint=f"run {again()}",
            path=path,
        )
    return record, files


def check_gate(
    workspace: Workspace, run_id: str, snapshot: RunSnapshot | None = None
) -> ApprovalRecord:
    """Everything launch checks before it touches an executor: the approval and every input
    the approved run reads (model files, datasets, the other files the lock names).

    ``snapshot`` is the run as the launching command read it, under the workspace lock it
    still holds: run.yaml's text (whose digest plan.json must record) and each dataset, so
    the gate checks the very files the launch then runs, each read once."""
    from kura.models.lockcheck import verify_locked_models

    record, files = _checked(workspace, run_id, snapshot)
    _check_cloud_at_launch(workspace, run_id, record, snapshot)
    lock_name = f"{COMPILED_DIR}/{LOCK_NAME}"
    fix = f"recompile with `kura run plan {run_id}`"
    lock = (
        parse_record(RunLock, files[lock_name], lock_path(workspace, run_id), fix=fix)
        if lock_name in files
        else read_lock(workspace, run_id)
    )
    planned = parse_record(
        PlanRecord,
        files[PLAN_JSON],
        workspace.run_dir(run_id) / PLAN_JSON,
        fix=f"run `kura run plan {run_id}` again (Kura writes this file)",
    )
    verify_locked_models(
        lock.models, run_id=run_id, plan=plan_command(run_id, planned.gpu.get("id"))
    )
    _check_datasets_at_launch(workspace, run_id, lock, snapshot)
    _check_inputs_at_launch(workspace, run_id, lock)
    return record


def _check_cloud_at_launch(
    workspace: Workspace, run_id: str, record: ApprovalRecord, snapshot: RunSnapshot | None
) -> None:
    """A remote run's cloud settings are still the approved ones (kura.toml's
    ``[skypilot]`` is not in any digest: it is compared resolved)."""
    from kura.execution.executors import executor_class
    from kura.runs.cloud import check_cloud_binding
    from kura.runs.store import load_run

    spec = snapshot.spec if snapshot is not None else load_run(workspace, run_id)[0]
    if not executor_class(spec.execution.executor).remote:
        return
    gpu_id = str(read_plan(workspace, run_id).gpu["id"])
    check_cloud_binding(workspace, spec, gpu_id, record.cloud)


def _check_inputs_at_launch(workspace: Workspace, run_id: str, lock: RunLock) -> None:
    """Every other file the trainer opens (a sample prompt's image) is the one approved."""
    from kura.runs.compile import file_sha256

    for entry in lock.inputs:
        path = Path(entry.path)
        now = file_sha256(path) if path.is_file() else None
        if now != entry.sha256:
            what = "is gone" if now is None else "changed"
            raise CheckFailed(
                f"{entry.purpose}: {entry.path} {what} after approval",
                hint="put the approved file back, or run "
                f"`{plan_again(workspace, run_id)}` and approve again",
                path=path,
            )


def _check_datasets_at_launch(
    workspace: Workspace, run_id: str, lock: RunLock, snapshot: RunSnapshot | None
) -> None:
    from kura.dataset.registry import read_dataset_snapshot, validate_snapshot

    known = {} if snapshot is None else snapshot.datasets
    for entry in lock.datasets:
        dataset = known.get(entry.name) or read_dataset_snapshot(workspace, entry.name)
        _check_dataset_path(workspace, run_id, dataset.spec, entry.media, entry.control)
        checked, _ = validate_snapshot(workspace, dataset)
        if not checked.ok:
            raise CheckFailed(
                f"dataset {entry.name} has blocking problems: " + _problem_files(checked.blocking),
                hint=f"fix them (`kura dataset validate {entry.name}`), then "
                f"`{plan_again(workspace, run_id)}` and approve again",
            )
        if checked.digest != entry.digest:
            raise CheckFailed(
                f"dataset {entry.name} changed after approval (digest {checked.digest[:19]}…)",
                hint=f"run `{plan_again(workspace, run_id)}` and approve again",
            )
