"""`kura run estimate`: the estimator on the run exactly as written.

Its result is a :class:`RunEstimate`: the backend's own estimate document (its keys are the
backend's: Musubi's estimator writes a breakdown and buckets, AI-Toolkit's none), every
step's :class:`~kura.backends.base.StepCost` and the verdict of the worst step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from kura.nextsteps import NextStep, next_list
from kura.runs.context import load_context
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.backends.base import Evaluation, StepCost

__all__ = ["RunEstimate", "Verdict", "backend_estimate", "cost_row", "estimate_run", "verdict"]


@dataclass(frozen=True)
class Verdict:
    """The fit of the worst step: ``fits`` False when any step does not fit, None when a
    step cannot be sized (or no GPU was named), True when every step fits; ``unsized`` the
    steps without a peak."""

    fits: bool | None
    worst_step: str | None
    unsized: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"fits": self.fits, "worst_step": self.worst_step, "unsized": list(self.unsized)}


def verdict(costs: tuple[StepCost, ...]) -> Verdict:
    """The verdict of the worst step (the largest of the failing steps, else of the sized)."""
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
    return Verdict(
        fits=fits,
        worst_step=worst.step if worst else None,
        unsized=tuple(c.step for c in costs if c.peak_gib is None and c.fits is not True),
    )


def cost_row(cost: StepCost) -> dict[str, object]:
    """One step's cost as the ``steps`` rows of an estimate document spell it."""
    return {
        "step": cost.step,
        "kind": cost.kind,
        "peak_gib": cost.peak_gib,
        "upper_gib": cost.upper_gib,
        "host_ram_gib": cost.host_ram_gib,
        "seconds": cost.seconds,
        "seconds_band": cost.seconds_band,
        "fits": cost.fits,
        "source": cost.source,
        "notes": list(cost.notes),
    }


def backend_estimate(written: Evaluation) -> dict[str, object]:
    """The backend's own estimate document of an evaluation (a copy)."""
    detail = written.detail.get("estimate")
    to_dict = getattr(detail, "to_dict", None)
    return dict(to_dict()) if callable(to_dict) else dict(written.detail)


@dataclass(frozen=True)
class RunEstimate:
    """``kura run estimate``: the backend's own ``estimate`` document of the run as
    written, every step's cost, and what to run next."""

    run: str
    estimate: Mapping[str, object]
    steps: tuple[StepCost, ...]
    next: tuple[NextStep, ...] = ()
    gpu_class: str | None = None
    """The GPU class id the fit was judged against (``--gpu``, run.yaml, this machine)."""

    kind: ClassVar[str] = "run-estimate"

    @property
    def verdict(self) -> Verdict:
        return verdict(self.steps)

    @property
    def gpu(self) -> str | None:
        gpu = self.estimate.get("gpu")
        return None if gpu is None else str(gpu)

    def to_dict(self) -> dict[str, object]:
        document = dict(self.estimate)
        document["steps"] = [cost_row(c) for c in self.steps]
        document.setdefault("kind", self.kind)  # a backend's own document may carry none
        document["run"] = self.run
        if self.gpu_class is not None:  # the id every document names a GPU class by
            document["gpu"] = self.gpu_class
        document["next"] = next_list(*self.next)
        return document


def estimate_run(workspace: Workspace, run_id: str, *, gpu: str | None = None) -> RunEstimate:
    """The run's estimate; the fit verdict needs a GPU (``--gpu``, run.yaml, local)."""
    from kura.errors import UsageError
    from kura.runs.gpu_choice import choose_gpu
    from kura.runs.inputs import plan_inputs

    context = load_context(workspace, run_id)
    try:
        gpu_class, _ = choose_gpu(gpu, context.spec.execution.gpu_class)
    except UsageError:
        gpu_class = None
    written = context.backend.estimate(context.spec, plan_inputs(workspace, context), gpu_class)
    return RunEstimate(
        run=run_id,
        estimate=backend_estimate(written),
        steps=written.costs,
        gpu_class=None if gpu_class is None else gpu_class.id,
    )
