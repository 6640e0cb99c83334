"""`kura run new`: draft run.yaml from the datasets, the bundle and the knowledge cards.

Every value Kura fills in is written into run.yaml with where it came from (``provenance``),
and every execution setting under ``backend.config`` with its reason: nothing is a hidden
default. Intent the datasets do not record (task) is inferred from the inspection and stated
with its evidence, never asked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kura.errors import UsageError
from kura.fsutil import atomic_write_text
from kura.knowledge.draft import Decision, draft_values, provenance_line
from kura.runs.sample_draft import (
    SAMPLING_POINTS,
    DraftedSamples,
    draft_sample_prompts,
    sample_every,
)
from kura.schema.base import parse_value, plain, set_dotted, validate_spec
from kura.schema.run import RunSpec, TrainingSection
from kura.workspace import Workspace, new_run_id
from kura.yamlio import dump_yaml

if TYPE_CHECKING:
    from kura.schema.dataset import DatasetSpec

__all__ = ["EXPLICIT_REASON", "RunCreated", "check_explicit_values", "create_run", "recipe_keys"]

EXPLICIT_REASON = "your instruction (--set)"
"""backend.reasons for a value a person set on the command line (the ladder keeps it)."""


@dataclass(frozen=True)
class RunCreated:
    run_id: str
    path: str
    architecture: str
    task: str | None
    task_evidence: str
    provenance: str
    decisions: list[dict[str, Any]]
    gpu_class: str | None = None
    """run.yaml's ``execution.gpu_class``: the GPU class its plan is for by default."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "run-new",
            "run": self.run_id,
            "path": self.path,
            "architecture": self.architecture,
            "task": self.task,
            "task_evidence": self.task_evidence,
            "provenance": self.provenance,
            "decisions": self.decisions,
            "next": [
                {
                    "command": f"kura run plan {self.run_id} --gpu {self.gpu_class or 'GPU'}",
                    "why": "compile, size every step and write plan.md for review"
                    + ("" if self.gpu_class else " (GPU: the class it trains on, `kura gpus`)"),
                }
            ],
        }


def recipe_keys(
    model: type[BaseModel] = TrainingSection, prefix: str = "training"
) -> dict[str, Any]:
    """Every recipe path (``training.network.rank`` …) with the schema's default."""
    keys: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        path = f"{prefix}.{name}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys.update(recipe_keys(annotation, path))
        else:
            keys[path] = field.get_default(call_default_factory=True)
    return keys


def _parse_sets(assignments: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--set {assignment!r} is not key=value",
                hint="e.g. --set training.network.rank=32 --set backend.config.KEY=VALUE",
            )
        values[key.strip()] = parse_value(raw)
    return values


def _task(workspace: Workspace, datasets: list[str], task: str | None) -> tuple[str | None, str]:
    from kura.dataset.registry import read_dataset

    if task:
        return task, "your instruction (--task)"
    for name in datasets:
        spec = read_dataset(workspace, name)
        if spec.intent.task:
            return spec.intent.task, f"dataset {name}: intent.task"
    for name in datasets:
        spec = read_dataset(workspace, name)
        if spec.facts and spec.facts.task_suggestion:
            return spec.facts.task_suggestion, f"dataset {name}: inspection suggests it"
    return None, "no dataset records a task; the card's `all` section applies (set --task)"


def _dataset_entry(
    workspace: Workspace, name: str, bundle: Any, knowledge: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    """The dataset's run entry and the provenance of what was drafted in it: a bundle with
    a native resolution the dataset's differs from is drafted at the native one nearest in
    aspect and area (on log scales, so a square dataset is as far from 1280×720 as from
    720×1280 and the first listed wins), saying so and why; a dataset of videos takes the
    frame settings the trainer documents for the architecture (``knowledge.video``)."""
    from kura.dataset.registry import read_dataset

    spec = read_dataset(workspace, name)
    resolution = list(spec.facts.resolution if spec.facts else [1024, 1024])
    entry: dict[str, Any] = {"name": name, "resolution": resolution, "repeats": 1}
    drafted: dict[str, str] = {}
    if spec.facts is not None and spec.facts.counts.get("videos", 0) > 0:
        for key, known in knowledge.video.items():
            entry[key] = known.value
            drafted[key] = f"{knowledge.backend} (videos): {known.source}"
    entry, reason = _native_resolution(entry, bundle, name)
    if reason:
        drafted["resolution"] = reason
    return entry, drafted


def _native_resolution(entry: dict[str, Any], bundle: Any, name: str) -> tuple[dict[str, Any], str]:
    """The entry at the bundle's native size nearest the dataset's, and why ("" when the
    dataset's own size is kept)."""
    resolution = entry["resolution"]
    native = bundle.native_resolutions
    if not native or tuple(resolution) in native:
        return entry, ""
    width, height = resolution

    def distance(size: tuple[int, int]) -> float:
        aspect = math.log((size[0] / size[1]) / (width / height))
        area = math.log((size[0] * size[1]) / (width * height))
        return abs(aspect) + abs(area)

    chosen = min(native, key=distance)
    entry["resolution"] = list(chosen)
    reason = (
        f"bundle {bundle.id} is trained at {chosen[0]}×{chosen[1]} "
        f"({bundle.native_resolution_source}); dataset {name} records {width}×{height}: "
        "drafted at the native size (set it back to train off-native)"
    )
    return entry, reason


def create_run(
    workspace: Workspace,
    *,
    datasets: list[str],
    base: str,
    task: str | None = None,
    sets: list[str] | None = None,
    backend: str | None = None,
    now: datetime | None = None,
) -> RunCreated:
    """Draft ``runs/<id>/run.yaml`` and return what was decided and why.

    ``backend`` picks the trainer (default: the bundle's own); one that does not train the
    bundle's architecture is an error naming those that do, never a quiet switch."""
    from kura.backends.registry import get_backend, require_accepts, require_serves
    from kura.models.bundles import get_bundle

    if not datasets:
        raise UsageError("a run needs at least one dataset", hint="pass --dataset NAME")
    bundle = get_bundle(base)
    architecture = bundle.architecture
    trainer = get_backend(backend or bundle.backend)
    require_serves(trainer, architecture)
    require_accepts(trainer, bundle)
    explicit = _parse_sets(sets or [])
    chosen_task, task_evidence = _task(workspace, datasets, task)
    defaults = recipe_keys()
    knowledge = trainer.knowledge(architecture)
    decisions = draft_values(
        workspace,
        trainer.name,
        architecture,
        chosen_task,
        keys=list(defaults),
        explicit={k: v for k, v in explicit.items() if k in defaults},
        defaults=knowledge.defaults,
    )
    drafted = trainer.draft_config(bundle, explicit)
    executor, executor_reason = _executor(workspace, trainer)
    entries = [_dataset_entry(workspace, name, bundle, knowledge) for name in datasets]
    width, height = entries[0][0]["resolution"]
    samples = _drafted_samples(
        workspace, trainer, chosen_task, datasets, decisions, size=(width, height)
    )
    document: dict[str, Any] = {
        "id": "",
        "task": chosen_task,
        "model": {"base": bundle.id},
        "datasets": [entry for entry, _ in entries],
        "training": _nest(decisions),
        "backend": {
            "name": trainer.name,
            "config": dict(drafted.config),
            "reasons": dict(drafted.reasons),
        },
        "execution": {"executor": executor, "gpus": 1},
        "provenance": {
            k: d.label(architecture) for k, d in decisions.items() if d.origin != "default"
        },
    }
    document["provenance"]["task"] = task_evidence
    if samples is not None and not samples.prompts:
        document["provenance"]["training.sample_prompts"] = samples.provenance
    elif samples is not None:
        document["training"]["sample_prompts"] = list(samples.prompts)
        every, why = _sample_cadence(decisions, knowledge)
        document["training"]["sample_every_n_epochs"] = every
        document["provenance"]["training.sample_prompts"] = samples.provenance
        document["provenance"]["training.sample_every_n_epochs"] = why
    for index, (_, drafted_keys) in enumerate(entries):
        for key, reason in drafted_keys.items():
            document["provenance"][f"datasets.{index}.{key}"] = reason
    document["provenance"]["backend.name"] = _backend_reason(bundle, trainer.name, backend)
    if executor_reason:
        document["provenance"]["execution.executor"] = executor_reason
    for key, value in explicit.items():
        if key not in defaults:
            set_dotted(document, key, value)
            document["provenance"][key] = "your instruction"
            if key.startswith("backend.config."):
                # The reason marks it as a person's: the fit ladder never replaces it.
                document["backend"]["reasons"][key.removeprefix("backend.config.")] = (
                    EXPLICIT_REASON
                )
    _check_with_drafted_samples(
        workspace, document, trainer, decisions, drafted=bool(samples and samples.prompts)
    )
    with workspace.lock():
        run_id = new_run_id(workspace.runs_dir, now)
        document["id"] = run_id
        path = workspace.run_dir(run_id) / "run.yaml"
        validate_spec(RunSpec, document, source=f"runs/{run_id}/run.yaml (from kura run new)")
        text = _HEADER + dump_yaml(plain(document))
        path.parent.mkdir(parents=True)
        atomic_write_text(path, text)
    return RunCreated(
        run_id=run_id,
        path=workspace.relative(path),
        architecture=architecture,
        task=chosen_task,
        task_evidence=task_evidence,
        provenance=provenance_line(
            {k: d for k, d in decisions.items() if d.origin != "default"}, architecture
        ),
        decisions=[d.to_dict() for d in decisions.values()],
        gpu_class=(document.get("execution") or {}).get("gpu_class"),
    )


_HEADER = (
    "# Kura run. `training` and `datasets` are the recipe; `backend.config` holds execution\n"
    "# accommodations in the trainer's own names, each with its reason in `backend.reasons`.\n"
    "# `provenance` says where each drafted value came from. Editing this file is drafting:\n"
    "# `kura run plan` then `kura run approve` make it launchable.\n"
)


def _executor(workspace: Workspace, trainer: Any) -> tuple[str, str]:
    """kura.toml's default executor, or the host where that default runs an image and the
    trainer has none (KohakuMoss lives in an environment of this machine), saying why."""
    from kura.errors import Unsupported
    from kura.execution.executors import executor_class

    default = workspace.config().executor.default
    if not executor_class(default).local_image:
        return default, ""
    try:
        trainer.image(workspace)
    except Unsupported as refusal:
        return "host", (
            f"{trainer.name} has no image ({refusal.message}): the host executor, not "
            f"kura.toml's default {default}"
        )
    return default, ""


def _backend_reason(bundle: Any, chosen: str, asked: str | None) -> str:
    """Why this backend: a proposal with its reason, naming the others that also train the
    architecture (each needs its own bundle and is chosen only by editing backend.name)."""
    from kura.backends.registry import backends_serving

    others = [n for n in backends_serving(bundle.architecture) if n != chosen]
    why = (
        "your instruction (--backend)"
        if asked
        else f"proposed: bundle {bundle.id} is laid out for {chosen}"
    )
    if others:
        why += f"; {', '.join(others)} also train{'s' if len(others) == 1 else ''} " + (
            f"{bundle.architecture} (with their own bundles; set backend.name to switch)"
        )
    return why


def check_explicit_values(
    workspace: Workspace,
    document: Any,
    *,
    source: str,
    datasets: Mapping[str, DatasetSpec] | None = None,
) -> None:
    """Refuse values the trainer would refuse (e.g. more swapped blocks than the model has),
    through the backend's ``check_settings`` (Musubi's estimator, say): SpecError naming the
    key's message and the fix, before anything is written. ``datasets`` are the run's
    datasets as the caller already read them (else they are read here)."""
    from kura.backends.base import PlanInputs
    from kura.backends.registry import get_backend
    from kura.dataset.registry import read_dataset
    from kura.errors import InvalidInput, SpecError
    from kura.models.bundles import get_bundle

    spec = validate_spec(RunSpec, document, source=source)
    backend = get_backend(spec.backend.name)
    if datasets is None:
        datasets = {use.name: read_dataset(workspace, use.name) for use in spec.datasets}
    else:
        datasets = {use.name: datasets[use.name] for use in spec.datasets}
    inputs = PlanInputs(bundle=get_bundle(spec.model.base), datasets=datasets)
    try:
        backend.check_settings(spec, inputs)
    except SpecError:
        raise
    except InvalidInput as exc:
        raise SpecError(
            f"{source}: {exc.message}",
            hint=(exc.hint + "; " if exc.hint else "") + "set a value inside the limit",
            path=source,
        ) from None


def _check_with_drafted_samples(
    workspace: Workspace,
    document: dict[str, Any],
    trainer: Any,
    decisions: dict[str, Decision],
    *,
    drafted: bool,
) -> None:
    """:func:`check_explicit_values`; when the backend refuses the drafted sample prompts
    (FramePack samples from a start image, which captions cannot name), the run gets none,
    and its provenance says why: a drafted value never makes ``run new`` fail."""
    from kura.errors import SpecError

    source = "kura run new --set"
    if not drafted:
        check_explicit_values(workspace, document, source=source)
        return
    try:
        check_explicit_values(workspace, document, source=source)
        return
    except SpecError as exc:
        refusal = exc.message
    training = document["training"]
    training["sample_prompts"] = []
    training["sample_every_n_epochs"] = decisions["training.sample_every_n_epochs"].value
    document["provenance"].pop("training.sample_every_n_epochs", None)
    check_explicit_values(workspace, document, source=source)
    document["provenance"]["training.sample_prompts"] = (
        f"not drafted: {trainer.title} refuses the prompts drafted from the captions ({refusal})"
    )


def _drafted_samples(
    workspace: Workspace,
    trainer: Any,
    task: str | None,
    datasets: list[str],
    decisions: dict[str, Decision],
    *,
    size: tuple[int, int],
) -> DraftedSamples | None:
    """Sample prompts for a character LoRA on a backend that samples during training, unless
    a person (``--set``, preferences, card) decided the prompts; each in the trainer's prompt
    syntax at the first dataset's training ``size``."""
    if task != "character" or not trainer.samples_during_training:
        return None
    if decisions["training.sample_prompts"].origin != "default":
        return None
    width, height = size
    return draft_sample_prompts(
        workspace,
        datasets[0],
        render=lambda text: trainer.sample_prompt(text, width=width, height=height),
    )


def _sample_cadence(decisions: dict[str, Decision], knowledge: Any) -> tuple[int | None, str]:
    """Epochs between drafted samples: about :data:`SAMPLING_POINTS` over a run counted in
    epochs; for a trainer that counts steps, its own default (it samples by steps, and
    its knowledge says by which setting)."""
    epochs = decisions["training.epochs"].value
    if epochs:
        every = sample_every(epochs)
        return every, (
            f"drafted with the sample prompts: every {every} epochs, about "
            f"{SAMPLING_POINTS} sampling points over the run"
        )
    known = knowledge.defaults["training.sample_every_n_epochs"]
    sample_first = decisions["training.sample_at_first"].value
    value = known.value if known.value is not None or sample_first else 1
    return value, f"drafted with the sample prompts: the length is in steps ({known.source})"


def _nest(decisions: dict[str, Decision]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, decision in decisions.items():
        set_dotted(tree, key.removeprefix("training."), decision.value)
    return tree
