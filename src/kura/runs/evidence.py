"""Evidence: the user's judgement of a run (notes.md) and what gets promoted to the cards.

``evaluate`` appends the rating and the user's own words with the settings, hardware, flags
and measured speed, so a later look at notes.md needs nothing else. ``promote`` writes the
run's recipe values into a knowledge card as ``source: run <id>`` lines, never touching an
owner or run line already there (a different value stays beside it).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from kura.errors import UsageError
from kura.fsutil import atomic_write_text
from kura.knowledge.baselines import card_path
from kura.knowledge.cards import SECTIONS, entry_line, insert_entry, parse_card, read_card
from kura.runs.store import load_run
from kura.workspace import Workspace

__all__ = ["PROMOTED_KEYS", "evaluate_run", "promote_run"]

PROMOTED_KEYS = (
    "training.learning_rate",
    "training.optimizer",
    "training.network.rank",
    "training.network.alpha",
    "training.effective_batch",
    "training.epochs",
    "training.timestep_sampling",
    "training.discrete_flow_shift",
)


def _value(spec: Any, key: str) -> Any:
    node: Any = spec
    for part in key.split(".")[0:]:
        node = getattr(node, part)
    return node


def _measured(workspace: Workspace, run_id: str, backend: str) -> dict[str, Any]:
    run_dir = workspace.run_dir(run_id)
    facts: dict[str, Any] = {}
    plan = run_dir / "plan.json"
    if plan.is_file():
        doc = json.loads(plan.read_text(encoding="utf-8"))
        facts["gpu"] = doc.get("gpu", {}).get("name")
        facts["estimated_peak_gib"] = doc.get("estimate", {}).get("peak_vram_gib")
    if (run_dir / "state.json").exists():
        from kura.backends.registry import get_backend
        from kura.execution.summary import run_summary

        summary = run_summary(run_dir, progress=get_backend(backend).progress)
        facts["state"] = summary.state.status
        progress = summary.progress
        facts["seconds_per_step"] = progress.seconds_per_step if progress else None
        facts["steps"] = progress.step if progress else None
    return facts


_CHOSEN = re.compile(r"^- chosen: (epoch|step) (\d+)\b", re.MULTILINE)


def _chosen_label(epoch: int | None, step: int | None) -> tuple[str, int] | None:
    if epoch is not None and step is not None:
        raise UsageError("choose an epoch or a step, not both", hint="pass --epoch N or --step N")
    for unit, value in (("epoch", epoch), ("step", step)):
        if value is not None:
            if value < 1:
                raise UsageError(f"--{unit} {value} must be 1 or more", hint=f"e.g. --{unit} 10")
            return unit, value
    return None


def chosen_checkpoint(workspace: Workspace, run_id: str) -> tuple[str, int] | None:
    """The epoch/step the latest evaluation in notes.md chose (``- chosen: epoch 10``)."""
    path = workspace.run_dir(run_id) / "notes.md"
    if not path.is_file():
        return None
    found = _CHOSEN.findall(path.read_text(encoding="utf-8"))
    return (found[-1][0], int(found[-1][1])) if found else None


def _architecture(spec: Any) -> str:
    from kura.models.bundles import get_bundle

    return get_bundle(spec.model.base).architecture


def evaluate_run(
    workspace: Workspace,
    run_id: str,
    *,
    rating: int | None,
    notes: str | None,
    epoch: int | None = None,
    step: int | None = None,
) -> dict[str, Any]:
    """Append a judgement to notes.md; ``epoch``/``step`` records the checkpoint chosen as
    best ("epoch 10 was best"), which promote then writes instead of the configured length."""
    chosen = _chosen_label(epoch, step)
    if rating is None and not notes and chosen is None:
        raise UsageError(
            "nothing to record", hint="pass --rating 1-5, --notes TEXT and/or --epoch N"
        )
    if rating is not None and not 1 <= rating <= 5:
        raise UsageError(f"--rating {rating} is outside 1-5", hint="1 = unusable … 5 = excellent")
    spec, _ = load_run(workspace, run_id)
    measured = _measured(workspace, run_id, spec.backend.name)
    flags = {k: v for k, v in spec.backend.config.items() if v not in (False, None, 0)}
    stamp = datetime.now(UTC).replace(microsecond=0).isoformat()
    lines = [f"## {stamp}", ""]
    if rating is not None:
        lines.append(f"- rating: {rating}/5")
    if chosen is not None:
        lines.append(f"- chosen: {chosen[0]} {chosen[1]} (the checkpoint judged best)")
    if notes:
        lines += ["- notes:", *(f"  > {line}" for line in notes.splitlines())]
    lines.append(
        "- settings: "
        + ", ".join(f"{k.removeprefix('training.')}={_value(spec, k)}" for k in PROMOTED_KEYS)
    )
    lines.append(
        f"- model: {spec.model.base}; datasets: {', '.join(d.name for d in spec.datasets)}"
    )
    lines.append("- flags: " + (", ".join(f"{k}={v}" for k, v in sorted(flags.items())) or "none"))
    lines.append(
        f"- hardware: {measured.get('gpu') or 'unknown'} × {spec.execution.gpus}; "
        f"state {measured.get('state', 'not launched')}; "
        f"{measured.get('seconds_per_step') or '?'} s/step measured"
    )
    path = workspace.run_dir(run_id) / "notes.md"
    with workspace.lock():
        text = path.read_text(encoding="utf-8") if path.exists() else f"# Notes on run {run_id}\n\n"
        atomic_write_text(path, text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")
    return {
        "kind": "run-evaluation",
        "run": run_id,
        "rating": rating,
        "notes": notes,
        "chosen": None if chosen is None else {"unit": chosen[0], "value": chosen[1]},
        "measured": measured,
        "path": workspace.relative(path),
        "next": [
            {
                "command": f"kura knowledge promote {run_id} --arch {_architecture(spec)} "
                f"--task {spec.task or 'TASK'}",
                "why": "write this run's recipe (and the chosen checkpoint) into the card",
            }
        ],
    }


def promote_run(
    workspace: Workspace,
    run_id: str,
    *,
    architecture: str,
    task: str,
    epoch: int | None = None,
    step: int | None = None,
) -> dict[str, Any]:
    """Write the run's recipe into the card. The length written is the chosen checkpoint's
    (``epoch``/``step`` here, else the latest ``- chosen:`` of ``kura run evaluate``), not
    the configured length, when one was chosen."""
    chosen = _chosen_label(epoch, step) or chosen_checkpoint(workspace, run_id)
    if task not in SECTIONS:
        raise UsageError(
            f"--task {task!r} is not a card section", hint=f"one of {', '.join(SECTIONS)}"
        )
    spec, _ = load_run(workspace, run_id)
    source = f"run {run_id}"
    added: dict[str, Any] = {}
    with workspace.lock():
        path = card_path(workspace, architecture)
        text = read_card(path) or f"# {architecture} — knowledge card\n"
        entries, _ = parse_card(text)
        for key in PROMOTED_KEYS:
            value = _value(spec, key)
            if key == "training.epochs" and chosen is not None:
                key = "training.epochs" if chosen[0] == "epoch" else "training.max_steps"
                value = chosen[1]
            if value is None:
                continue
            same = [e for e in entries if e.key == key and e.section == task and e.source == source]
            if same:
                continue
            text = insert_entry(text, task, entry_line(key, value, source))
            added[key] = value
        if added:
            atomic_write_text(path, text)
    return {
        "kind": "knowledge-promote",
        "run": run_id,
        "architecture": architecture,
        "task": task,
        "added": added,
        "chosen": None if chosen is None else {"unit": chosen[0], "value": chosen[1]},
        "card": workspace.relative(path),
    }
