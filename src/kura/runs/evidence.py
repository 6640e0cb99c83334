"""Evidence: the user's judgement of a run (notes.md) and what gets promoted to the cards.

``evaluate`` appends the rating and the user's own words with the settings, hardware, flags
and measured speed, so a later look at notes.md needs nothing else. ``promote`` writes the
run's recipe values into a knowledge card as ``source: run <id>`` lines, never touching an
owner or run line already there (a different value stays beside it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from kura.bounded import read_text
from kura.errors import StateConflict, UsageError
from kura.fsutil import atomic_write_text
from kura.knowledge.baselines import card_path
from kura.knowledge.cards import SECTIONS, entry_line, insert_entry, parse_card, read_card
from kura.nextsteps import NextStep, next_list
from kura.runs.store import read_run
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.schema.run import RunSpec

__all__ = [
    "PROMOTED_KEYS",
    "Checkpoint",
    "Measured",
    "Promotion",
    "RunEvaluation",
    "evaluate_run",
    "promote_run",
]

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


def _value(spec: RunSpec, key: str) -> object:
    """The run's value at a dotted ``training.…`` path."""
    node: object = spec
    for part in key.split(".")[0:]:
        node = getattr(node, part)
    return node


@dataclass(frozen=True)
class Measured:
    """What a run's files say about it at evaluation: the plan's GPU and estimated peak
    (``planned``: a plan.json exists) and the attempt's state, speed and step
    (``launched``: a state.json exists)."""

    planned: bool = False
    gpu: str | None = None
    estimated_peak_gib: float | None = None
    launched: bool = False
    state: str | None = None
    seconds_per_step: float | None = None
    steps: int | None = None

    def to_dict(self) -> dict[str, object]:
        facts: dict[str, object] = {}
        if self.planned:
            facts["gpu"] = self.gpu
            facts["estimated_peak_gib"] = self.estimated_peak_gib
        if self.launched:
            facts["state"] = self.state
            facts["seconds_per_step"] = self.seconds_per_step
            facts["steps"] = self.steps
        return facts


@dataclass(frozen=True)
class Checkpoint:
    """The checkpoint a person chose as best: ``unit`` ``epoch`` or ``step``, its number."""

    unit: str
    value: int

    def to_dict(self) -> dict[str, object]:
        return {"unit": self.unit, "value": self.value}


@dataclass(frozen=True)
class RunEvaluation:
    """``kura run evaluate``: the judgement appended to the run's notes.md at ``path``."""

    run: str
    rating: int | None
    notes: str | None
    chosen: Checkpoint | None
    measured: Measured
    path: str
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "run-evaluation"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "run": self.run,
            "rating": self.rating,
            "notes": self.notes,
            "chosen": None if self.chosen is None else self.chosen.to_dict(),
            "measured": self.measured.to_dict(),
            "path": self.path,
            "next": next_list(*self.next),
        }


@dataclass(frozen=True)
class Promotion:
    """``kura knowledge promote``: the recipe values ``added`` to the card at ``card``
    (none when they were there already), with the checkpoint length chosen."""

    run: str
    architecture: str
    task: str
    added: Mapping[str, object]
    chosen: Checkpoint | None
    card: str
    next: tuple[NextStep, ...] = ()
    backend: str = ""
    """The trainer whose card it is (a card is per trainer × architecture)."""

    kind: ClassVar[str] = "knowledge-promote"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "run": self.run,
            "backend": self.backend,
            "architecture": self.architecture,
            "task": self.task,
            "added": dict(self.added),
            "chosen": None if self.chosen is None else self.chosen.to_dict(),
            "card": self.card,
            "next": next_list(*self.next),
        }


def _float(value: object) -> float | None:
    """A number of plan.json as written (an int stays one), None for anything else."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _measured(workspace: Workspace, run_id: str, backend: str) -> Measured:
    run_dir = workspace.run_dir(run_id)
    found = Measured()
    plan = run_dir / "plan.json"
    if plan.is_file():
        doc = json.loads(plan.read_text(encoding="utf-8"))
        name = doc.get("gpu", {}).get("name")
        found = replace(
            found,
            planned=True,
            gpu=None if name is None else str(name),
            estimated_peak_gib=_float(doc.get("estimate", {}).get("peak_vram_gib")),
        )
    if (run_dir / "state.json").exists():
        from kura.backends.registry import get_backend
        from kura.execution.summary import run_summary

        summary = run_summary(run_dir, progress=get_backend(backend).progress)
        progress = summary.progress
        found = replace(
            found,
            launched=True,
            state=summary.state.status,
            seconds_per_step=progress.seconds_per_step if progress else None,
            steps=progress.step if progress else None,
        )
    return found


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
    found = _CHOSEN.findall(read_text(path, what="notes file"))
    return (found[-1][0], int(found[-1][1])) if found else None


def require_ran(workspace: Workspace, run_id: str, verb: str) -> None:
    """A run judged or promoted must have run: launched, ended, and saved a LoRA. A run
    that never trained has no samples to judge and no recipe that is known to work."""
    from kura.execution.state import read_state, state_path

    run_dir = workspace.run_dir(run_id)
    if not state_path(run_dir).exists():
        raise StateConflict(
            f"run {run_id} was never launched: there is nothing to {verb}",
            hint=f"`kura run status {run_id}` names its next step (plan, approve, launch)",
        )
    state = read_state(run_dir)
    if not state.is_terminal:
        raise StateConflict(
            f"run {run_id} is still {state.status}: {verb} it once it ends",
            hint=f"follow it with `kura run watch {run_id}`",
        )
    if not any((run_dir / "output").rglob("*.safetensors")):
        raise StateConflict(
            f"run {run_id} ended {state.status} without saving a LoRA: there is nothing to {verb}",
            hint=f"`kura run status {run_id}` names the ways on",
        )


def _architecture(spec: RunSpec) -> str:
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
) -> RunEvaluation:
    """Append a judgement to notes.md; ``epoch``/``step`` records the checkpoint chosen as
    best ("epoch 10 was best"), which promote then writes instead of the configured length."""
    chosen = _chosen_label(epoch, step)
    if rating is None and not notes and chosen is None:
        raise UsageError(
            "nothing to record", hint="pass --rating 1-5, --notes TEXT and/or --epoch N"
        )
    if rating is not None and not 1 <= rating <= 5:
        raise UsageError(f"--rating {rating} is outside 1-5", hint="1 = unusable … 5 = excellent")
    spec = read_run(workspace, run_id)
    require_ran(workspace, run_id, "evaluate")
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
        f"- hardware: {measured.gpu or 'unknown'} × {spec.execution.gpus}; "
        f"state {measured.state if measured.launched else 'not launched'}; "
        f"{measured.seconds_per_step or '?'} s/step measured"
    )
    path = workspace.run_dir(run_id) / "notes.md"
    with workspace.lock():
        text = (
            read_text(path, what="notes file") if path.exists() else f"# Notes on run {run_id}\n\n"
        )
        atomic_write_text(path, text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")
    return RunEvaluation(
        run=run_id,
        rating=rating,
        notes=notes,
        chosen=None if chosen is None else Checkpoint(*chosen),
        measured=measured,
        path=workspace.relative(path),
        next=(
            NextStep(
                f"kura knowledge promote {run_id}" + ("" if spec.task else " --task TASK"),
                "write this run's recipe (and the chosen checkpoint) into the card",
            ),
        ),
    )


def promote_run(
    workspace: Workspace,
    run_id: str,
    *,
    architecture: str | None = None,
    task: str | None = None,
    epoch: int | None = None,
    step: int | None = None,
) -> Promotion:
    """Write the run's recipe into the card. The length written is the chosen checkpoint's
    (``epoch``/``step`` here, else the latest ``- chosen:`` of ``kura run evaluate``), not
    the configured length, when one was chosen."""
    chosen = _chosen_label(epoch, step) or chosen_checkpoint(workspace, run_id)
    spec = read_run(workspace, run_id)
    own = _architecture(spec)
    if architecture is not None and architecture != own:
        raise UsageError(
            f"run {run_id} trained {own}, not {architecture}: its recipe belongs in the {own} card",
            hint=f"`kura knowledge promote {run_id}` (the architecture is the run's)",
        )
    architecture = own
    task = task or spec.task
    if task is None:
        raise UsageError(
            f"run {run_id} records no task: name the card section",
            hint=f"pass --task, one of {', '.join(SECTIONS)}",
        )
    if task not in SECTIONS:
        raise UsageError(
            f"--task {task!r} is not a card section", hint=f"one of {', '.join(SECTIONS)}"
        )
    require_ran(workspace, run_id, "promote")
    source = f"run {run_id}"
    added: dict[str, object] = {}
    with workspace.lock():
        path = card_path(workspace, spec.backend.name, architecture)
        text = read_card(path) or f"# {architecture} on {spec.backend.name} — knowledge card\n"
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
    return Promotion(
        run=run_id,
        architecture=architecture,
        task=task,
        added=added,
        chosen=None if chosen is None else Checkpoint(*chosen),
        card=workspace.relative(path),
        backend=spec.backend.name,
    )
