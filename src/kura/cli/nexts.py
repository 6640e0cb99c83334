"""The ``next`` of the documents the CLI layer prints, where the library leaves it out.

The agent contract (:mod:`kura.nextsteps`): every ``--json`` document with a natural next
action carries ``next``, a list of ``{command, why}``, most useful first; it is an empty list
when the document's state has nothing to follow (a verified file, a backend already
installed). Each function here reads one document kind and returns that list. A verb that
returns a typed result gets it as the value's ``next`` field, ``followed(value,
after_…)`` (the function reads the value's ``to_dict()``); a document the CLI still builds
as a dict is printed as ``with_next(document, after_…(document))``. One document has one of
the two, never both, and the verbs whose library builds ``next`` itself (launch, cancel,
status, evaluate, the machine's doctor) have no function here. Documents without a natural
next action (``schema``, ``model-bundles``, ``run-list``, ``run-logs``, ``knowledge-card`` …)
carry none: ``tests/cli/test_next_contract.py`` holds the decision for every command.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import Field, replace
from typing import Any, ClassVar, Protocol, TypeVar

from kura.nextsteps import NextStep, next_list

__all__ = [
    "after_backend_doctor",
    "after_backend_install",
    "after_backend_list",
    "after_compile",
    "after_dataset_list",
    "after_dataset_set",
    "after_demo",
    "after_ema",
    "after_export",
    "after_image_build",
    "after_import",
    "after_init",
    "after_inspection",
    "after_knowledge_promote",
    "after_model_check",
    "after_model_fetch",
    "after_model_lock",
    "after_model_verify",
    "after_run_estimate",
    "after_sweep_approve",
    "after_sweep_collect",
    "after_sweep_plan",
    "after_sweep_promote",
    "after_sweep_report",
    "after_sweep_status",
    "after_sweep_worker",
    "after_whatif",
    "followed",
    "with_next",
]

Steps = list[dict[str, str]]


def with_next(document: dict[str, Any], steps: Steps) -> dict[str, Any]:
    """The document with its ``next`` (a copy: what a command wrote to disk is unchanged)."""
    return {**document, "next": steps}


class _Followed(Protocol):
    """A typed result (a frozen dataclass) with its ``next`` steps."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def next(self) -> tuple[NextStep, ...]: ...

    def to_dict(self) -> Mapping[str, object]: ...


F = TypeVar("F", bound=_Followed)


def followed(value: F, after: Callable[[dict[str, Any]], Steps]) -> F:
    """A typed result with the ``next`` that ``after`` decides on its document (the
    library's values leave ``next`` empty where the CLI layer decides it)."""
    steps = after(dict(value.to_dict()))
    return replace(value, next=tuple(NextStep(s["command"], s["why"]) for s in steps))


def _q(value: object) -> str:
    return shlex.quote(str(value))


# -- workspace, backends, datasets ------------------------------------------------------


def after_init(doc: dict[str, Any]) -> Steps:
    return next_list(
        NextStep(
            f"kura --workspace {_q(doc['root'])} dataset add NAME PATH",
            "register a folder of images or videos with their captions",
        ),
    )


def after_demo(doc: dict[str, Any]) -> Steps:
    workspace = _q(doc["workspace"])
    return next_list(
        NextStep(f"kura --workspace {workspace} run list", "the demo's runs, with their states"),
        NextStep(f"kura --workspace {workspace} serve", "the runs, loss curves and samples"),
    )


def after_backend_list(doc: dict[str, Any]) -> Steps:
    return next_list(
        *(
            NextStep(f"kura backend install {row['name']}", "its environment is not there")
            if row.get("kura_installs")
            else NextStep(f"kura doctor {row['name']}", "it is not where kura.toml says")
            for row in doc["backends"]
            if row.get("present") is False
        )
    )


def after_backend_install(doc: dict[str, Any]) -> Steps:
    backend = doc["backend"]
    return next_list(
        NextStep(f"kura doctor {backend}", "check that the environment answers"),
        NextStep(
            f"kura run new --dataset NAME --base BUNDLE --backend {backend}",
            "draft a run on it (`kura model bundles` lists the bundles it trains)",
        ),
    )


def after_inspection(doc: dict[str, Any]) -> Steps:
    """A registered dataset: answer the questions, then validate; a folder: register it."""
    name = doc.get("name")
    if name is None:
        return next_list(
            NextStep(
                f"kura dataset add NAME {_q(doc['root'])}",
                "register the folder (inspecting a path writes nothing)",
            )
        )
    keys = [q["key"] for q in doc.get("questions") or [] if q.get("key")]
    return next_list(
        NextStep(
            f"kura dataset set {name} " + " ".join(f"{k}=…" for k in keys),
            "record what only a person can answer (the questions above)",
        )
        if keys
        else None,
        NextStep(f"kura dataset validate {name}", "exit 1 lists what would break training"),
    )


def after_dataset_set(doc: dict[str, Any]) -> Steps:
    return next_list(
        NextStep(f"kura dataset validate {doc['name']}", "check it with what you recorded"),
    )


def after_dataset_list(doc: dict[str, Any]) -> Steps:
    datasets = doc["datasets"]
    if not datasets:
        return next_list(NextStep("kura dataset add NAME PATH", "no dataset is registered yet"))
    return next_list(
        *(
            NextStep(
                f"kura dataset validate {item['name']}",
                f"{item['blocking_problems']} blocking problem(s), each with its fix",
            )
            for item in datasets
            if item.get("blocking_problems")
        )
    )


# -- models -----------------------------------------------------------------------------


def after_model_check(doc: dict[str, Any]) -> Steps:
    """A refused or unreadable file: what the roles need, and the damaged file re-hashed."""
    if doc["ok"]:
        return []
    damaged = [entry["path"] for entry in doc["files"] if "error" in entry]
    refused = [
        entry
        for entry in doc["files"]
        if "error" not in entry and entry["verdict"]["status"] == "refused"
    ]
    architecture = doc.get("architecture") or next(
        (a for entry in refused for a in entry.get("architectures") or []), None
    )
    listing = f"kura model bundles --arch {architecture}" if architecture else "kura model bundles"
    return next_list(
        *(
            NextStep(
                f"kura model verify {_q(path)}",
                "it is not a whole safetensors file: compare it with the known digests, then "
                "download it again (`kura model fetch BUNDLE`)",
            )
            for path in damaged
        ),
        NextStep(
            listing,
            "the file each role needs (the refusals say what these files are); "
            "`kura model fetch BUNDLE` downloads them",
        )
        if refused or any(c["status"] == "mismatch" for c in doc["cross_checks"])
        else None,
    )


def after_model_fetch(doc: dict[str, Any]) -> Steps:
    bundle = doc["bundle"]
    if not doc["ok"]:
        return next_list(
            NextStep(
                f"kura model fetch {bundle}",
                "again after the fix each failed file names (a gated repository needs "
                "HF_TOKEN); finished files are not downloaded twice",
            )
        )
    return next_list(
        NextStep(f"kura model lock {bundle}", "pin each role's file, size and sha256"),
        NextStep(f"kura run new --dataset NAME --base {bundle}", "draft a run on it"),
    )


def after_model_verify(doc: dict[str, Any]) -> Steps:
    if doc["ok"]:
        return []
    bad = [e["path"] for e in doc["files"] if e["status"] != "ok"]
    if doc.get("target_kind") == "bundle":
        return next_list(
            NextStep(
                f"kura model fetch {doc['target']}",
                f"download again what does not match: {', '.join(bad)}",
            )
        )
    return next_list(
        NextStep(
            "kura model fetch BUNDLE",
            f"{', '.join(bad)} does not match its known digest: download it again",
        )
    )


def after_model_lock(doc: dict[str, Any]) -> Steps:
    return next_list(
        NextStep(f"kura run new --dataset NAME --base {doc['bundle']}", "draft a run on it"),
    )


# -- runs -------------------------------------------------------------------------------


def after_compile(doc: dict[str, Any]) -> Steps:
    return next_list(
        NextStep(f"kura run plan {doc['run']}", "estimate, fit and write plan.md for review"),
    )


def after_run_estimate(doc: dict[str, Any]) -> Steps:
    """The plan for the GPU class the estimate was judged against."""
    from kura.runs.plan import plan_command

    plan = plan_command(doc["run"], doc.get("gpu"))
    if doc.get("fits") is False:
        return next_list(
            NextStep(plan, "the run as written does not fit: the plan walks the memory aids")
        )
    return next_list(NextStep(plan, "write plan.md for review and approval"))


def after_import(doc: dict[str, Any]) -> Steps:
    bundle = doc.get("bundle")
    if bundle is None:
        return []
    backend = doc.get("backend")
    return next_list(
        NextStep(
            f"kura run new --dataset NAME --base {bundle} --backend {backend}",
            "plans on this bundle read the imported run as evidence"
            + ("" if doc.get("gpu") else " (import it again with --gpu to credit its speed)"),
        ),
    )


def after_export(doc: dict[str, Any], *, task: str | None = None) -> Steps:
    """``task``: the run's own (run.yaml), named in the promote step instead of a TASK
    placeholder when the run knows it."""
    # a save split per expert (Wan 2.2 A14B) was written as one file per expert
    run = doc["run"]
    out = " ".join(_q(d["out"]) for d in (doc, *(doc.get("companions") or [])))
    copy = {
        "comfyui": ("ComfyUI/models/loras/", "load it in ComfyUI's LoRA loader"),
        "diffusers": ("YOUR_PROJECT/", "load it with the pipeline's load_lora_weights"),
    }.get(str(doc.get("format")), ("DEST/", "use it where its format loads"))
    return next_list(
        NextStep(f"cp {out} {copy[0]}", copy[1]),
        NextStep(
            f'kura run evaluate {run} --rating N --notes "…"',
            "record your verdict of its samples (and the chosen epoch)",
        ),
        NextStep(
            f"kura knowledge promote {run}",
            "keep what worked in the knowledge card (its architecture's, its task's section)",
        ),
    )


def after_ema(doc: dict[str, Any]) -> Steps:
    run = doc["run"]
    return next_list(
        NextStep(f"cp {_q(doc['out'])} ComfyUI/models/loras/", "try the averaged LoRA"),
        NextStep(
            f'kura run evaluate {run} --rating N --notes "…"',
            "record whether the average beat the single checkpoints",
        ),
    )


def after_knowledge_promote(doc: dict[str, Any]) -> Steps:
    return next_list(
        NextStep(
            f"kura knowledge show {doc['architecture']} --backend {doc['backend']}",
            f"the card the values went to ({doc['card']}); new runs start from it",
        ),
    )


# -- sweeps -----------------------------------------------------------------------------


def after_sweep_plan(doc: dict[str, Any]) -> Steps:
    return next_list(
        NextStep(
            f"kura sweep approve {doc['sweep']}",
            "after reading plan.md: one approval covers every trial",
        ),
    )


def after_sweep_approve(doc: dict[str, Any]) -> Steps:
    """The worker on the GPU class the sweep was planned (and priced) for."""
    gpu = doc.get("gpu")
    return next_list(
        NextStep(
            f"kura sweep worker {doc['sweep']}" + (f" --gpu {gpu}" if gpu else ""),
            "run trials here (one worker per GPU of the class the sweep was planned for)",
        ),
    )


def after_sweep_worker(doc: dict[str, Any]) -> Steps:
    sweep = doc["sweep"]
    return next_list(
        NextStep(f"kura sweep status {sweep}", "every worker's trials so far"),
        NextStep(f"kura sweep report {sweep}", "the best trial and what mattered"),
    )


def after_sweep_status(doc: dict[str, Any]) -> Steps:
    sweep = doc["sweep"]
    if not doc.get("approved"):
        return next_list(
            NextStep(f"kura sweep plan {sweep}", "no approved plan yet: plan, then approve it")
        )
    counts = doc.get("counts") or {}
    finished = sum(n for status, n in counts.items() if status != "running")
    return next_list(
        NextStep(f"kura sweep worker {sweep}", "trials are left to run")
        if finished < int(doc.get("trials") or 0)
        else None,
        NextStep(f"kura sweep report {sweep}", "the best trial so far and what mattered")
        if counts
        else None,
    )


def after_sweep_report(doc: dict[str, Any]) -> Steps:
    sweep = doc["sweep"]
    collect = NextStep(
        f"kura sweep collect {sweep} --from OTHER_WORKSPACE", "gather trials other machines ran"
    )
    if doc.get("mode") == "pareto":
        front = doc.get("pareto_front") or []
        if not front:
            return next_list(
                NextStep(f"kura sweep worker {sweep}", "no trial has a loss and a judge score yet")
            )
        return next_list(
            *(
                NextStep(
                    f"kura sweep promote {sweep} --trial {row['number']}",
                    f"choose one trial of the Pareto front (this one: loss {row['values'][0]:.4g}"
                    f", judge {row['values'][1]:.3g}); look at its samples first",
                )
                for row in front
            ),
            collect,
        )
    if doc.get("best") is None:
        return next_list(NextStep(f"kura sweep worker {sweep}", "no trial has finished yet"))
    return next_list(
        NextStep(f"kura sweep promote {sweep}", "write the winner into the knowledge card"),
        collect,
    )


def after_sweep_promote(doc: dict[str, Any]) -> Steps:
    return next_list(
        NextStep(
            "kura run new --dataset NAME --base BUNDLE",
            f"a new run drafts from the card ({doc['card']}, ## {doc['section']})",
        ),
    )


def after_sweep_collect(doc: dict[str, Any]) -> Steps:
    sweep = doc["sweep"]
    missing = (doc.get("counts") or {}).get("missing", 0)
    return next_list(
        NextStep(
            f"kura sweep collect {sweep} --from OTHER_WORKSPACE",
            f"{missing} artifact(s) were found nowhere: name the workspace that has them",
        )
        if missing
        else None,
        NextStep(f"kura sweep report {sweep}", "the report over every collected trial"),
    )


# -- set-up: doctor, images, the what-if estimate ------------------------------------------


def after_backend_doctor(doc: dict[str, Any]) -> Steps:
    """Each failed or warned finding whose fix is a command, in order; all well: a run."""
    backend = doc["scope"]
    fixes = [
        NextStep(f["fix"], f"{f['check']}: {f['detail']}")
        for f in doc["findings"]
        if f["status"] in ("fail", "warn") and str(f.get("fix", "")).startswith("kura ")
    ]
    if doc["ok"] and not fixes:
        fixes.append(
            NextStep(
                f"kura run new --dataset NAME --base BUNDLE --backend {backend}",
                "the trainer is ready: draft a run on it",
            )
        )
    return next_list(*fixes)


def after_image_build(doc: dict[str, Any]) -> Steps:
    backend = doc["backend"]
    if not doc["ran"]:
        return next_list(
            NextStep(f"kura image build {backend} --run", "run this build (it was only printed)")
        )
    if doc["exit_code"] != 0:
        return next_list(
            NextStep(f"kura image build {backend} --run", "rerun after fixing docker's error")
        )
    return next_list(NextStep(f"kura doctor {backend}", "check the image the runs will use"))


def after_whatif(doc: dict[str, Any]) -> Steps:
    base, backend = _q(doc["whatif"]["bundle"]), doc["backend"]
    new = f"kura run new --dataset NAME --base {base} --backend {backend}"
    if doc["verdict"]["fits"] is False:
        return next_list(
            NextStep(new, "as asked it does not fit: a run's plan walks the memory aids for it")
        )
    return next_list(NextStep(new, "draft the run: its plan sizes every step on your dataset"))
