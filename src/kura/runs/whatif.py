"""`kura estimate`: a backend's own estimate of a configuration, without a run.

The what-if is a run spec like any other: one dataset of a single item at the asked size, the
recipe's rank, optimizer, effective batch and steps, and ``backend.config`` as the backend
drafts it for the bundle with the person's ``--set`` values on top (a key the backend does not
read for the architecture is refused, naming the ones it does). It goes through the same
``check_settings`` and ``estimate`` verbs as ``kura run new`` and ``kura run plan``, so every
step's cost comes with the backend's source, and the verdict is the worst step's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from kura.errors import UsageError
from kura.nextsteps import NextStep, next_list
from kura.runs.estimate import Verdict, backend_estimate, cost_row, verdict
from kura.schema.base import parse_value, set_dotted, validate_spec
from kura.schema.run import RunSpec

if TYPE_CHECKING:
    from kura.backends.base import Backend, Evaluation, PlanInputs, StepCost

__all__ = [
    "WHATIF_DATASET",
    "WhatIf",
    "WhatIfEstimate",
    "WhatIfSettings",
    "estimate_whatif",
    "verdict",
    "whatif_inputs",
]

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


def _assignments(sets: tuple[str, ...]) -> dict[str, object]:
    values: dict[str, object] = {}
    for assignment in sets:
        key, sep, raw = assignment.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--set {assignment!r} is not KEY=VALUE",
                hint="e.g. --set backend.config.KEY=VALUE or --set training.KEY=VALUE",
            )
        values[key.strip()] = parse_value(raw)
    return values


def _check_keys(backend: Backend, architecture: str, explicit: Mapping[str, object]) -> None:
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
    from kura.schema.dataset import DatasetFacts, DatasetSpec

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


@dataclass(frozen=True)
class WhatIfSettings:
    """The configuration a what-if estimated, as the run spec it built has it."""

    base: str
    resolution: tuple[int, int]
    frames: int
    effective_batch: int
    rank: int
    optimizer: str
    steps: int | None
    items: int
    backend_config: Mapping[str, object]

    def to_dict(self) -> dict[str, object]:
        return {
            "bundle": self.base,
            "resolution": list(self.resolution),
            "frames": self.frames,
            "effective_batch": self.effective_batch,
            "rank": self.rank,
            "optimizer": self.optimizer,
            "steps": self.steps,
            "items": self.items,
            "backend_config": dict(self.backend_config),
        }


@dataclass(frozen=True)
class WhatIfEstimate:
    """``kura estimate``: the backend's own ``estimate`` document, every step's cost (or
    the one step asked for), the configuration estimated and the worst step's verdict."""

    estimate: Mapping[str, object]
    steps: tuple[StepCost, ...]
    backend: str
    gpu: str | None
    whatif: WhatIfSettings
    verdict: Verdict
    time_and_cost: Mapping[str, object] | None = None
    """Every shown step's time summed with its band and priced (``TimeCost.to_dict``)."""
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "run-estimate"

    def to_dict(self) -> dict[str, object]:
        document = dict(self.estimate)
        document["steps"] = [cost_row(c) for c in self.steps]
        document.setdefault("kind", self.kind)
        document["backend"] = self.backend
        document["gpu"] = self.gpu
        document["whatif"] = self.whatif.to_dict()
        document["verdict"] = self.verdict.to_dict()
        document["time_and_cost"] = None if self.time_and_cost is None else dict(self.time_and_cost)
        document["next"] = next_list(*self.next)
        return document


def _result(
    backend: Backend, spec: RunSpec, written: Evaluation, question: WhatIf
) -> WhatIfEstimate:
    estimate = backend_estimate(written)
    costs = written.costs
    if question.step is not None:
        names = [c.step for c in costs]
        if question.step not in names:
            raise UsageError(
                f"--step {question.step!r} is not a step of this {backend.name} run",
                hint=f"its steps: {', '.join(names)}",
            )
        costs = tuple(c for c in costs if c.step == question.step)
    gpu = estimate.get("gpu") if "gpu" in estimate else question.gpu
    return WhatIfEstimate(
        estimate=estimate,
        steps=costs,
        backend=backend.name,
        gpu=None if gpu is None else str(gpu),
        whatif=WhatIfSettings(
            base=spec.model.base,
            resolution=(question.width, question.height),
            frames=question.frames,
            effective_batch=spec.training.effective_batch,
            rank=spec.training.network.rank,
            optimizer=spec.training.optimizer,
            steps=spec.training.max_steps,
            items=1,
            backend_config=dict(spec.backend.config),
        ),
        verdict=verdict(costs),
        time_and_cost=_time_and_cost(costs, question, spec.execution.gpus),
    )


def _time_and_cost(costs: tuple[StepCost, ...], question: WhatIf, gpus: int) -> dict[str, object]:
    """Every shown step's time summed with its band, priced at the GPU class's cheapest
    offer (for all of the run's GPUs) when it has one."""
    from kura.planning.gpus import get_gpu_class
    from kura.runs.timecost import time_and_cost

    offer = get_gpu_class(question.gpu).cheapest_offer() if question.gpu else None
    price = offer.usd_per_hour if offer is not None else None
    rows = {"steps": [cost_row(c) for c in costs]}
    return time_and_cost(rows, None if price is None else price * gpus).to_dict()


def estimate_whatif(question: WhatIf) -> WhatIfEstimate:
    """The estimate of ``question``: the backend's own estimate document, every step's cost
    (or the one ``question.step`` names), the verdict."""
    from kura.planning.gpus import get_gpu_class

    gpu = get_gpu_class(question.gpu) if question.gpu else None
    backend, spec, inputs = whatif_inputs(question)
    backend.check_settings(spec, inputs)
    written = backend.estimate(spec, inputs, gpu)
    return _result(backend, spec, written, question)
