"""plan.md: the one review a person (or agent) reads before approving a run.

Deterministic (no timestamps): the same inputs give the same bytes, so the plan's digest is
part of what an approval binds to.
"""

from __future__ import annotations

import shlex
from typing import Any

__all__ = ["lora_document", "lora_scale", "render"]


def _gib(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f} GiB"


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines


def _resources(
    spec: Any,
    gpu: dict[str, Any],
    host: dict[str, Any] | None,
    compiled: Any,
    aid_keys: tuple[str, ...],
) -> list[str]:
    out = ["## Resources", ""]
    price = f", ${gpu['usd_per_hour']:.2f}/h" if gpu.get("usd_per_hour") else ""
    out.append(
        f"- GPU: {gpu['name']} ({gpu['memory_gib']:g} GiB{price}) × {spec.execution.gpus}"
        f" — chosen by {gpu['chosen_by']}"
    )
    if host is None:
        out.append("- Host: another machine (host RAM not known; block swap needs pinned RAM)")
    else:
        ram = host.get("ram_total_gib")
        out.append(
            f"- Host: {ram if ram is not None else '?'} GiB RAM, "
            f"{host['disk_free_gib']:.0f} GiB free disk, {host['cpu_count']} CPUs"
        )
    out.append(f"- Executor: {spec.execution.executor}; backend {spec.backend.name}")
    roles = compiled.lock["models"]["roles"]
    out.append(f"- Model bundle: {spec.model.base} ({compiled.lock['models']['architecture']})")
    for slot, entry in sorted(roles.items()):
        source = entry["source"]
        remote = "/".join(part for part in (source["repo"], source["filename"]) if part)
        where = entry["path"] or f"pending download: {remote}"
        out.append(f"  - {slot}: {where} ({entry['component'] or 'not checked yet'})")
    aids = {k: v for k, v in spec.backend.config.items() if v not in (False, 0, None)}
    memory = [k for k in aid_keys if k in aids]
    out.append(
        "- Memory aids: "
        + (
            ", ".join(
                f"{k}={aids[k]} ({spec.backend.reasons.get(k, 'no reason given')})" for k in memory
            )
            or "none"
        )
    )
    return [*out, ""]


def lora_scale(network: Any) -> float:
    """alpha / rank as run.yaml asks it (1 means unscaled; Musubi's and most docs' ``alpha 1``
    at rank 32 is 1/32, which is why they pair it with a higher learning rate). What the
    trainer applies is its recipe's ``lora_scale`` (1.0 where its format ignores alpha)."""
    return float(network.alpha) / float(network.rank)


def lora_document(network: Any, *, scale: float | None = None) -> dict[str, Any]:
    """plan.json's ``estimate.lora``: rank, alpha and the scale the trainer applies (read
    from its compiled configuration when given, else alpha/rank), with run.yaml's alpha/rank
    beside it."""
    asked = lora_scale(network)
    return {
        "rank": int(network.rank),
        "alpha": float(network.alpha),
        "scale": asked if scale is None else scale,
        "scale_asked": asked,
        "scale_source": "alpha/rank of run.yaml"
        if scale is None
        else "the trainer's compiled configuration",
    }


def _recipe(spec: Any, recipe: Any) -> list[str]:
    """The recipe as the trainer's compiled files hold it (``Backend.recipe``), then where
    run.yaml's intent differs, then the datasets, seed and provenance of the intent."""
    rows = [(item.item, item.runs, item.source) for item in recipe.items]
    out = [
        "## Recipe",
        "",
        f"As {spec.backend.name}'s compiled configuration holds it "
        f"({', '.join(recipe.files)}), not as run.yaml asks it:",
        "",
        *_table(("part", "the trainer runs", "read from"), rows),
        "",
    ]
    differences = recipe.differences
    if differences:
        out.append("Where run.yaml's intent differs:")
        out += [
            f"- {item.item}: run.yaml asks {item.intent}; {item.differs}" for item in differences
        ]
    else:
        out.append("Every part follows run.yaml's intent.")
    out.append("")
    settings: list[tuple[str, object]] = [("seed", spec.training.seed)]
    for use in spec.datasets:
        settings.append(
            (f"dataset {use.name}", f"{'x'.join(map(str, use.resolution))} × {use.repeats} repeats")
        )
    out += [*_table(("value", "setting"), settings), ""]
    provenance = " · ".join(
        f"{k.removeprefix('training.')}: {v}" for k, v in spec.provenance.items()
    )
    out += [f"Provenance: {provenance}", ""]
    return out


def _accommodations(spec: Any) -> list[str]:
    rows = [
        (k, v, spec.backend.reasons.get(k, "no reason given"))
        for k, v in sorted(spec.backend.config.items())
    ]
    return ["## Accommodations (backend.config)", "", *_table(("key", "value", "reason"), rows), ""]


def _unsized(fit: dict[str, Any], written: dict[str, Any]) -> list[str]:
    """A backend that cannot size its steps: say so, list its aids with their costs."""
    out = ["## Fit", "", f"Kura cannot say whether this run fits: {written['confidence']}", ""]
    out += [f"- {note}" for note in fit.get("notes", [])[1:]]
    if fit.get("aids"):
        out += ["", "Memory aids this trainer offers (none applied; set them in backend.config):"]
        out += [
            f"- {a['aid']} ({', '.join(a['keys'])}): saves {a['saves']}; costs {a['costs']}"
            for a in fit["aids"]
        ]
    return [*out, ""]


def _fit(
    fit: dict[str, Any],
    written: dict[str, Any],
    applied: dict[str, Any],
    kept: dict[str, Any] | None = None,
) -> list[str]:
    if fit.get("sizeable") is False or written.get("fits") is None:
        return _unsized(fit, written)
    verdict = "fits" if written["fits"] else "does NOT fit"
    out = [
        "## Fit",
        "",
        f"The run as written {verdict}: peak {_gib(written['peak_vram_gib'])} "
        f"± {written['band_gib'] / 2:.1f} GiB of {_gib(written['usable_gib'])} usable "
        f"(confidence: {written['confidence']}).",
        "",
    ]
    breakdown = written["breakdown"]
    out += _table(
        ("weights", "LoRA + optimizer", "activations", "swap buffers", "context"),
        [
            tuple(
                _gib(breakdown.get(k))
                for k in ("weights", "lora_and_optimizer", "activations", "swap_buffers", "context")
            )
        ],
    )
    out.append("")
    if applied:
        out.append("Applied from the fit ladder (speed only, meaning kept):")
        out += [f"- {k}: {v['from']} → {v['to']}" for k, v in sorted(applied.items())]
        out.append("")
    if kept:
        out.append(
            "Kept as you set them (the ladder treats them as fixed; the verdict above is for "
            "the run with your values):"
        )
        out += [
            f"- {k}: {v['yours']} (the ladder alone would choose {v['ladder']})"
            for k, v in sorted(kept.items())
        ]
        if not written["fits"]:
            out.append("- the ladder cannot fit the run around these values on this GPU")
        out.append("")
    for rung in fit["rungs"]:
        flag = " **ask first**" if rung["ask_first"] else ""
        out.append(f"- rung {rung['aid']}: {rung['reason']} (×{rung['slowdown']:g} time){flag}")
    if not fit["fits"]:
        out += ["", "Nothing speed-only fits. Options that change the recipe (not applied):"]
        for option in fit["recipe_options"]:
            worst = f" ({option['step']}, the worst step)" if option.get("step") else ""
            out.append(
                f"- {option['option']}: peak {_gib(option['peak_gib'])}{worst}"
                + (" — fits" if option["fits"] else " — still too large")
            )
        if fit.get("smallest_gpu"):
            gpu = fit["smallest_gpu"]
            out.append(f"- a larger GPU: {gpu.get('name')} ({gpu.get('memory_gib')} GiB)")
    if fit["ask_first"]:
        out += ["", "A step above costs more than about 2× in time: decide before approving."]
    return [*out, ""]


def _alternatives(
    fit: dict[str, Any], written: dict[str, Any], usd_per_hour: float | None
) -> list[str]:
    """Every fitting combination the ladder found, with its cost, and the rule it chose by
    (and the by-hand rule's pick, when it differs)."""
    rows = fit.get("alternatives") or []
    if len(rows) < 2:
        return []
    steps = (written.get("config") or {}).get("total_steps")

    def hours(seconds: float | None) -> float | None:
        return None if seconds is None or not steps else seconds * steps / 3600

    table = []
    for row in rows:
        total = hours(row["step_seconds"])
        cost = f"${total * usd_per_hour:.2f}" if total is not None and usd_per_hour else "—"
        mark = (
            "chosen" if row["chosen"] else ("first sufficient" if row["first_sufficient"] else "")
        )
        table.append(
            (
                ", ".join(f"{k}={v}" for k, v in row["aids"].items()) or "none",
                _gib(row["peak_gib"]),
                f"{row['host_ram_gib']:.0f} GiB",
                f"{row['step_seconds']:.2f} s" if row["step_seconds"] is not None else "—",
                f"{total:.1f} h" if total is not None else "—",
                cost,
                mark,
            )
        )
    out = ["## Configurations that fit", ""]
    out += _table(("aids", "peak", "host RAM", "s/step", "total", "cost", ""), table)
    out += ["", f"Chosen by the rule: {fit.get('rule', 'the fastest that fits')}."]
    first = next((r for r in rows if r["first_sufficient"]), None)
    if first is not None and not first["chosen"]:
        out.append(
            "Adding aids one rung at a time and stopping at the first that fits would pick "
            "the row marked *first sufficient*; the chosen row is faster."
        )
    return [*out, ""]


def _trainer_report(written: dict[str, Any]) -> list[str]:
    """Sections the backend's own estimate document adds (its trainer's data plan, the
    estimator's calibration …), rendered as given: ``trainer_report`` = [{title, lines}]."""
    out: list[str] = []
    for section in written.get("trainer_report") or []:
        out += [f"## {section['title']}", ""]
        out += [f"- {line}" for line in section["lines"]]
        out.append("")
    return out


def _time(spec: Any, written: dict[str, Any], gpu: dict[str, Any]) -> list[str]:
    hours = written.get("total_hours")
    out = ["## Time and cost", ""]
    step = written.get("step_seconds")
    out.append(f"- {step:.2f} s per step" if step else "- step time unknown")
    steps = written["config"]["total_steps"] if written.get("config") else None
    out.append(f"- {steps} optimizer steps" if steps else "- steps unknown")
    from kura.runs.timecost import time_and_cost

    price = gpu.get("usd_per_hour")
    whole = time_and_cost(written, price * spec.execution.gpus if price else None)
    if hours is not None:
        out.append(f"- about {hours:.1f} h in training")
    if whole.hours is not None:
        parts = ", ".join(f"{name} {_span(value)}" for name, value in whole.by_step.items())
        cost = (
            f"; about ${whole.usd:.2f} (${whole.low_usd:.2f}–${whole.high_usd:.2f})"
            if whole.usd is not None and whole.low_usd is not None and whole.high_usd is not None
            else ""
        )
        out.append(
            f"- the whole run, every step: about {_span(whole.hours)} "
            f"({_span(whole.low_hours or 0.0)}–{_span(whole.high_hours or 0.0)}){cost} — {parts}"
        )
    if whole.untimed:
        out.append(f"- not timed (not in the total): {', '.join(whole.untimed)}")
    for step in written.get("steps") or []:
        if step.get("kind") == "cache" and step.get("seconds") is not None:
            band = step.get("seconds_band")
            spread = f" ±{band:.0%}" if band is not None else ""
            notes = "; ".join(step.get("notes") or [])
            out.append(
                f"- {step['step']}: about {step['seconds'] / 60:.1f} min{spread} "
                f"(source: {step['source']})" + (f" — {notes}" if notes else "")
            )
        elif step.get("kind") == "sample" and step.get("notes"):
            out.append(f"- {step['step']}: {'; '.join(step['notes'])}")
    return [*out, ""]


def _span(hours: float) -> str:
    """Hours as a person reads them: minutes under an hour."""
    return f"{hours:.1f} h" if hours >= 1 else f"{hours * 60:.0f} min"


def _evidence(evidence: dict[str, Any]) -> list[str]:
    out = ["## Evidence from past runs", ""]
    if not evidence["runs"]:
        return [*out, "- none: no earlier run of this model on this GPU class", ""]
    for run in evidence["runs"]:
        config = ", ".join(f"{k}={v}" for k, v in sorted(run["config"].items())) or "no aids"
        measured = run["measured_step_seconds"]
        speed = f", {measured:.2f} s/step measured" if measured else ""
        outcome = run["status"] + (f" ({run['diagnosis']})" if run["diagnosis"] else "")
        attempt = f" attempt {run['attempt']}" if run.get("attempt", 1) > 1 else ""
        ran_on = run.get("gpu") or "GPU not read"
        if run.get("gpu") and run.get("planned_gpu") and run["gpu"] != run["planned_gpu"]:
            ran_on += f", planned for {run['planned_gpu']}"
        peak = f", peak {run['peak_gib']:.1f} GiB" if run.get("peak_gib") else ""
        out.append(f"- run {run['run']}{attempt}: {outcome} on {ran_on}; {config}{speed}{peak}")
    if evidence["same_config_oom"]:
        out.append("- this exact configuration ran out of memory before: it is not called fitting")
        for worked in evidence.get("succeeded_configs", []):
            config = ", ".join(f"{k}={v}" for k, v in sorted(worked["config"].items()))
            out.append(
                f"  - worked instead: run {worked['run']} attempt {worked['attempt']}: {config}"
            )
    for ignored in evidence.get("ignored_measurements", []):
        out.append(
            f"- not used to recalibrate: run {ignored['run']} attempt "
            f"{ignored['attempt']} ({ignored['why']})"
        )
    return [*out, ""]


def render(
    *,
    spec: Any,
    gpu: dict[str, Any],
    host: dict[str, Any] | None,
    fit: dict[str, Any],
    written: dict[str, Any],
    evidence: dict[str, Any],
    applied: dict[str, Any],
    kept: dict[str, Any],
    contingency: dict[str, Any] | None,
    regrets: list[dict[str, Any]],
    downloads: dict[str, Any],
    compiled: Any,
    checks: list[dict[str, Any]],
    plan_id: str,
    aid_keys: tuple[str, ...],
    recipe: Any,
) -> str:
    """plan.md; ``aid_keys`` are the ``backend.config`` keys the backend's fit ladder
    manages (its memory aids), listed under Resources where they are on; ``recipe`` is the
    backend's read-back of the compiled files (``TrainerRecipe``)."""
    lines = [f"# Plan for run {spec.id}", "", f"Plan id: `{plan_id}`", ""]
    task = spec.task or "unspecified"
    lines.append(f"{task} LoRA on {spec.model.base}; approve with `kura run approve {spec.id}`.")
    lines.append("")
    lines += _resources(spec, gpu, host, compiled, aid_keys)
    lines += _recipe(spec, recipe)
    lines += _accommodations(spec)
    lines += _fit(fit, written, applied, kept)
    lines += _alternatives(
        fit,
        written,
        gpu.get("usd_per_hour") * spec.execution.gpus if gpu.get("usd_per_hour") else None,
    )
    lines += _trainer_report(written)
    lines += _time(spec, written, gpu)
    lines += _evidence(evidence)
    lines += ["## Downloads", ""]
    if downloads["files"]:
        size = downloads["bytes_known"] / 2**30
        unknown = (
            f" (+{downloads['sizes_unknown']} of unknown size)"
            if downloads["sizes_unknown"]
            else ""
        )
        lines.append(
            f"- {', '.join(downloads['files'])}: {size:.1f} GiB{unknown} — `{downloads['hint']}`"
        )
    else:
        lines.append("- none: every model file is present")
    lines += ["", "## Contingency", ""]
    if contingency:
        change = ", ".join(f"{k}={v}" for k, v in sorted(contingency["change"].items()))
        lines.append(f"- on out-of-memory: set {change} and relaunch (no new approval needed)")
    else:
        lines.append("- none prepared: an out-of-memory goes back through plan and approval")
    lines += ["", "## Last look", ""]
    lines += [f"- {r['trigger']} -> {r['reminder']}" for r in regrets] or [
        "- no regrets match this run"
    ]
    lines += ["", "## Commands", ""]
    for step in compiled.steps:
        lines += [f"{step['name']}:", "", "```", shlex.join(step["argv"]), "```", ""]
    lines += ["## Checks", ""]
    lines += [f"- {c['check']}: {c['status']} — {c['detail']}" for c in checks]
    for warning in compiled.warnings:
        lines.append(f"- warning: {warning}")
    return "\n".join(lines) + "\n"
