"""`kura estimate`: a backend's own estimate of a configuration, without a run.

The what-if is a run spec like any other: one dataset of a single item at the asked size, the
recipe's rank, optimizer, effective batch and steps, and ``backend.config`` as the backend
drafts it for the bundle with the person's ``--set`` values on top (a key the backend does not
read for the architecture is refused, naming the ones it does). It goes through the same
``check_settings`` and ``estimate`` verbs as ``kura run new`` and ``kura run plan``, so every
step's cost comes with the backend's source, and the verdict is the worst step's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kura.errors import UsageError
from kura.spec.base import parse_value, set_dotted, validate_spec
from kura.spec.run import RunSpec

if TYPE_CHECKING:
    from kura.backends.base import Backend, Evaluation, PlanInputs, StepCost

__all__ = ["WHATIF_DATASET", "WhatIf", "estimate_whatif", "verdict", "whatif_inputs"]

WHATIF_DATASET = "what-if"
"""The one dataset of a what-if: a single item at ``--resolution`` (× ``--frames``)."""
SOURCE = "kura estimate"
EXPLICIT_REASON = "your instruction (kura estimate --set)"


@dataclass(frozen=True)
class WhatIf:
    """One ``kura estimate`` question. ``batch`` is the recipe's effective batch (the
    trainer's micro-batch is a ``backend.config`` key, set with ``sets``); ``steps`` the
    optimizer steps the time covers; ``sets`` are ``KEY=VALUE`` run.yaml paths
    (``backend.config.KEY=VALUE``, ``training.learning_rate=2e-4``)."""

    base: str
    width: int
    height: int
    backend: str | None = None
    frames: int = 1
    batch: int = 1
    rank: int = 32
    optimizer: str = "adamw8bit"
    steps: int = 1000
    sets: tuple[str, ...] = ()
    gpu: str | None = None
    step: str | None = None


def _assignments(sets: tuple[str, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for assignment in sets:
        key, sep, raw = assignment.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--set {assignment!r} is not KEY=VALUE",
                hint="e.g. --set backend.config.KEY=VALUE or --set training.KEY=VALUE",
            )
        values[key.strip()] = parse_value(raw)
    return values


def _check_keys(backend: Backend, architecture: str, explicit: dict[str, Any]) -> None:
    """Refuse a ``backend.config`` key the backend does not read for ``architecture``."""
    known = backend.config_keys(architecture)
    unknown = sorted(
        key.removeprefix("backend.config.")
        for key in explicit
        if key.startswith("backend.config.") and key.removeprefix("backend.config.") not in known
    )
    if unknown:
        raise UsageError(
            f"{backend.name} does not read backend.config key(s) {', '.join(unknown)} for "
            f"{architecture}",
            hint=f"its keys: {', '.join(sorted(known))}",
        )
    for key in explicit:
        if key.split(".", 1)[0] in ("model", "backend", "datasets", "id") and not key.startswith(
            "backend.config."
        ):
            raise UsageError(
                f"--set {key} is not a what-if setting",
                hint="use --base and --backend for the model and trainer, and --set "
                "backend.config.KEY=VALUE or training.KEY=VALUE for the rest",
            )


def whatif_inputs(question: WhatIf) -> tuple[Backend, RunSpec, PlanInputs]:
    """The backend, the run spec and the plan inputs of ``question``."""
    from kura.backends.base import PlanInputs
    from kura.backends.registry import get_backend, require_serves
    from kura.models.bundles import get_bundle
    from kura.spec.dataset import DatasetFacts, DatasetSpec

    if question.frames < 1:
        raise UsageError(f"--frames {question.frames} is below 1", hint="e.g. --frames 33")
    bundle = get_bundle(question.base)
    backend = get_backend(question.backend or bundle.backend)
    require_serves(backend, bundle.architecture)
    explicit = _assignments(question.sets)
    _check_keys(backend, bundle.architecture, explicit)
    explicit.setdefault("training.effective_batch", question.batch)
    drafted = backend.draft_config(bundle, explicit)
    use: dict[str, Any] = {
        "name": WHATIF_DATASET,
        "resolution": [question.width, question.height],
    }
    if question.frames > 1:
        use["frames"] = [question.frames]
    document: dict[str, Any] = {
        "id": "what-if",
        "model": {"base": bundle.id},
        "datasets": [use],
        "training": {
            "network": {"rank": question.rank},
            "optimizer": question.optimizer,
            "max_steps": question.steps,
        },
        "backend": {
            "name": backend.name,
            "config": dict(drafted.config),
            "reasons": dict(drafted.reasons),
        },
    }
    for key, value in explicit.items():
        set_dotted(document, key, value)
        if key.startswith("backend.config."):
            document["backend"]["reasons"][key.removeprefix("backend.config.")] = EXPLICIT_REASON
    spec = validate_spec(RunSpec, document, source=SOURCE)
    kind = "videos" if question.frames > 1 else "images"
    facts = DatasetFacts(
        digest="",
        inspected_at="",
        resolution=[question.width, question.height],
        counts={kind: 1},
    )
    dataset = DatasetSpec(name=WHATIF_DATASET, media="", facts=facts)
    inputs = PlanInputs(bundle=bundle, datasets={WHATIF_DATASET: dataset})
    return backend, spec, inputs


def verdict(costs: tuple[StepCost, ...]) -> dict[str, Any]:
    """The verdict of the worst step: False when any step does not fit, None when a step
    cannot be sized (or no GPU was named), True when every step fits."""
    fits: bool | None
    if any(c.fits is False for c in costs):
        fits = False
    elif costs and all(c.fits is True for c in costs):
        fits = True
    else:
        fits = None
    failing = [c for c in costs if c.fits is False]
    sized = [c for c in costs if c.upper_gib is not None]
    worst = max(failing or sized or list(costs), key=lambda c: c.upper_gib or 0.0, default=None)
    return {
        "fits": fits,
        "worst_step": worst.step if worst else None,
        "unsized": [c.step for c in costs if c.peak_gib is None and c.fits is not True],
    }


def _document(
    backend: Backend, spec: RunSpec, written: Evaluation, question: WhatIf
) -> dict[str, Any]:
    from kura.runs.plan import estimate_document

    document = estimate_document(written)
    document.setdefault("kind", "run-estimate")
    for row, cost in zip(document["steps"], written.costs, strict=True):
        row["notes"] = list(cost.notes)
    costs = written.costs
    if question.step is not None:
        names = [c.step for c in costs]
        if question.step not in names:
            raise UsageError(
                f"--step {question.step!r} is not a step of this {backend.name} run",
                hint=f"its steps: {', '.join(names)}",
            )
        costs = tuple(c for c in costs if c.step == question.step)
        document["steps"] = [s for s in document["steps"] if s["step"] == question.step]
    document["backend"] = backend.name
    document.setdefault("gpu", question.gpu)
    document["whatif"] = {
        "base": spec.model.base,
        "resolution": [question.width, question.height],
        "frames": question.frames,
        "effective_batch": spec.training.effective_batch,
        "rank": spec.training.network.rank,
        "optimizer": spec.training.optimizer,
        "steps": spec.training.max_steps,
        "items": 1,
        "backend_config": dict(spec.backend.config),
    }
    document["verdict"] = verdict(costs)
    document["time_and_cost"] = _time_and_cost(document, question, spec.execution.gpus)
    return document


def _time_and_cost(document: dict[str, Any], question: WhatIf, gpus: int) -> dict[str, Any]:
    """Every shown step's time summed with its band, priced at the GPU class's cheapest
    offer (for all of the run's GPUs) when it has one."""
    from kura.planning.gpus import get_gpu_class
    from kura.runs.timecost import time_and_cost

    offer = get_gpu_class(question.gpu).cheapest_offer() if question.gpu else None
    price = offer.usd_per_hour if offer is not None else None
    return time_and_cost(document, None if price is None else price * gpus).to_dict()


def estimate_whatif(question: WhatIf) -> dict[str, Any]:
    """The ``run-estimate`` document of ``question``: the backend's own estimate document,
    every step's cost under ``steps`` (or the one ``question.step`` names), the verdict."""
    from kura.planning.gpus import get_gpu_class

    gpu = get_gpu_class(question.gpu) if question.gpu else None
    backend, spec, inputs = whatif_inputs(question)
    backend.check_settings(spec, inputs)
    written = backend.estimate(spec, inputs, gpu)
    return _document(backend, spec, written, question)
