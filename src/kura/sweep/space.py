"""The space file (``space.yaml``): which recipe keys a sweep searches, and how it scores.

::

    axes:
      training.learning_rate: {low: 1.0e-5, high: 1.0e-3, log: true}
      training.network.rank: {choices: [8, 16, 32, 64]}
      training.max_steps: {low: 20, high: 60, step: 20}
    objective: {metric: heldout_loss, validation_fraction: 0.2}
    early_stop: {min_resource: 5, reduction_factor: 3}

Every axis must be a key the backend exposes (``Backend.search_keys``) with a range inside
the trainer's limits; memory aids are never axes (the fit ladder sets them per trial).

``objective.mode`` is ``weighted`` (the default: a judge's score is folded into one value,
``(1 − judge_weight)·loss + judge_weight·(1 − judge)``) or ``pareto``: an Optuna
multi-objective study (minimize the loss, maximize the judge's score) whose report is the
Pareto front, one trial of which a person promotes. A pareto space needs a ``module:function``
judge (human ratings arrive after a trial was told to the study, which a multi-objective study
cannot take later) and runs without early stopping: Optuna's pruners work on one reported value
(``Trial.report`` and ``should_prune`` raise ``NotImplementedError`` in a multi-objective
study), so ``early_stop`` is off unless given, and refused when given enabled.

A space's digest is taken over its canonical values; ``mode`` is left out of it (and of every
document) while it is ``weighted``, so the digest of a space written before ``mode`` existed is
unchanged, and a study started in one mode refuses a space file in the other ("the space
changed").
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from kura.errors import SpecError
from kura.plainyaml import read_yaml
from kura.schema.base import StrictModel, validate_spec

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

    from kura.backends.base import SearchKey, SearchKeys

__all__ = ["Axis", "CheckedAxis", "CheckedSpace", "SpaceFile", "check_space", "load_space"]


class Axis(StrictModel):
    """A range (``low``/``high``, ``log``, ``step`` for whole numbers) or ``choices``."""

    low: int | float | None = None
    high: int | float | None = None
    log: bool = False
    step: int | float | None = Field(None, gt=0)
    choices: list[Any] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _one_kind(self) -> Axis:
        ranged = self.low is not None or self.high is not None
        if ranged == (self.choices is not None):
            raise ValueError("an axis takes either low and high, or choices")
        if ranged and (self.low is None or self.high is None):
            raise ValueError("a range needs both low and high")
        if ranged and self.low is not None and self.high is not None and self.low >= self.high:
            raise ValueError(f"low {self.low} must be below high {self.high}")
        if self.log and self.low is not None and self.low <= 0:
            raise ValueError("a log range needs low > 0")
        if self.log and self.step is not None:
            raise ValueError("a log range takes no step")
        return self


ObjectiveMode = Literal["weighted", "pareto"]


class Objective(StrictModel):
    mode: ObjectiveMode = Field(
        "weighted",
        description="`weighted`: one value, the loss with the judge's score folded in by "
        "judge_weight; `pareto`: two objectives (loss down, judge score up), the report shows "
        "the Pareto front and promote takes a trial of it",
    )
    metric: Literal["heldout_loss", "train_loss"] = Field(
        "heldout_loss",
        description="held-out loss on a validation split Kura carves, or the final train loss; "
        "unset: the held-out loss where the backend reports one, else the train loss",
    )
    validation_fraction: float = Field(0.2, gt=0, lt=1)
    judge: str | None = Field(
        None,
        description="`ratings` (human ratings from `kura run evaluate`) or `module:function`, "
        "a scorer of a trial's samples returning 0–1 (higher is better)",
    )
    judge_weight: float = Field(0.5, ge=0, le=1, description="weighted mode only")

    @model_validator(mode="after")
    def _pareto(self) -> Objective:
        if self.mode != "pareto":
            return self
        if self.judge is None:
            raise ValueError(
                "mode pareto needs a judge (objective.judge: module:function): with the loss "
                "alone there is one objective and no front; or use mode weighted"
            )
        if self.judge == "ratings":
            raise ValueError(
                "mode pareto cannot use judge `ratings`: people rate a trial after it "
                "finished, and a multi-objective study cannot be told a trial's values later; "
                "use mode weighted (ratings given later count in its report) or a "
                "module:function judge"
            )
        if "judge_weight" in self.model_fields_set:
            raise ValueError(
                "judge_weight folds the judge into the loss, which mode pareto does not do; "
                "remove judge_weight, or use mode weighted"
            )
        return self

    @model_serializer(mode="wrap")
    def _canonical(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Weighted: no ``mode`` key (documents and digests as before modes); pareto: no
        ``judge_weight`` (it is not used)."""
        data: dict[str, Any] = handler(self)
        data.pop("mode" if self.mode == "weighted" else "judge_weight", None)
        return data


class EarlyStop(StrictModel):
    enabled: bool = True
    min_resource: int = Field(5, ge=1, description="steps before the first rung")
    reduction_factor: int = Field(3, ge=2)


class SpaceFile(StrictModel):
    axes: dict[str, Axis] = Field(min_length=1)
    objective: Objective = Objective()
    early_stop: EarlyStop = Field(
        EarlyStop(), description="on by default; off (and refused on) with objective.mode pareto"
    )

    @model_validator(mode="after")
    def _no_pruning_in_pareto(self) -> SpaceFile:
        if self.objective.mode != "pareto" or not self.early_stop.enabled:
            return self
        if "early_stop" in self.model_fields_set:
            raise ValueError(
                "early_stop with objective.mode pareto: Optuna's pruners stop a trial on one "
                "reported value, and a multi-objective study takes none (Trial.report raises "
                "NotImplementedError); set early_stop: {enabled: false}, or use mode weighted"
            )
        # not given: off, and said so in `kura sweep new` and the plan
        object.__setattr__(self, "early_stop", EarlyStop(enabled=False))
        return self


@dataclass(frozen=True)
class CheckedAxis:
    key: str
    kind: Literal["float", "int", "choice"]
    low: float | None
    high: float | None
    log: bool
    step: float | None
    choices: tuple[Any, ...]
    source: str

    def contains(self, value: Any) -> bool:
        if self.kind == "choice":
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        assert self.low is not None and self.high is not None
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "choice":
            return {"key": self.key, "choices": list(self.choices), "source": self.source}
        return {
            "key": self.key,
            "kind": self.kind,
            "low": self.low,
            "high": self.high,
            "log": self.log,
            "step": self.step,
            "source": self.source,
        }


@dataclass(frozen=True)
class CheckedSpace:
    axes: tuple[CheckedAxis, ...]
    spec: SpaceFile
    digest: str

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(axis.key for axis in self.axes)

    def distributions(self) -> dict[str, BaseDistribution]:
        """Optuna distributions, one per axis (Optuna is imported here only)."""
        from optuna.distributions import (
            CategoricalDistribution,
            FloatDistribution,
            IntDistribution,
        )

        out: dict[str, BaseDistribution] = {}
        for axis in self.axes:
            if axis.kind == "choice":
                out[axis.key] = CategoricalDistribution(list(axis.choices))
            elif axis.kind == "int":
                assert axis.low is not None and axis.high is not None
                out[axis.key] = IntDistribution(
                    int(axis.low), int(axis.high), log=axis.log, step=int(axis.step or 1)
                )
            else:
                assert axis.low is not None and axis.high is not None
                out[axis.key] = FloatDistribution(axis.low, axis.high, log=axis.log, step=axis.step)
        return out


def load_space(path: Path) -> tuple[SpaceFile, str]:
    """The space file and the sha256 of its text (a changed file is a changed space)."""
    document = read_yaml(path)
    spec = validate_spec(SpaceFile, document, source=path)
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True)
    return spec, "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def check_space(
    spec: SpaceFile,
    digest: str,
    exposed: SearchKeys,
    *,
    backend: str,
    source: Path | str,
) -> CheckedSpace:
    """Each axis against the backend's searchable keys and their limits."""
    axes = []
    for key, axis in spec.axes.items():
        if not key.startswith("training."):
            raise SpecError(
                f"{source}: axis {key} is not a recipe key (training.*)",
                hint="memory aids and backend.config settings are never search axes: the fit "
                "ladder sets them per trial; remove the axis",
                path=source,
            )
        declared = exposed.keys.get(key)
        if declared is None:
            raise SpecError(
                f"{source}: axis {key} is not a key backend {backend} lets a sweep search",
                hint=f"searchable keys: {', '.join(sorted(exposed.keys))} ({exposed.source})",
                path=source,
            )
        axes.append(_check_axis(key, axis, declared, source))
    spec = _with_backend_metric(spec, exposed)
    if spec.objective.metric == "heldout_loss" and not exposed.heldout_loss:
        raise SpecError(
            f"{source}: objective.metric heldout_loss, but backend {backend} reports no "
            "held-out loss",
            hint="set objective.metric: train_loss (and a judge if you have one)",
            path=source,
        )
    return CheckedSpace(tuple(axes), spec, digest)


def _with_backend_metric(spec: SpaceFile, exposed: SearchKeys) -> SpaceFile:
    """An unset ``objective.metric`` is the best the backend reports: its held-out loss where
    its trainer computes one, else the train loss (Musubi and AI-Toolkit report no held-out
    loss). The digest stays the file's, so a study started before this rule resumes."""
    if "metric" in spec.objective.model_fields_set or exposed.heldout_loss:
        return spec
    objective = spec.objective.model_copy(update={"metric": "train_loss"})
    return spec.model_copy(update={"objective": objective})


def _check_axis(key: str, axis: Axis, declared: SearchKey, source: Path | str) -> CheckedAxis:
    where = f"{source}: axis {key}"
    if declared.kind == "choice":
        if axis.choices is None:
            raise SpecError(
                f"{where} is a range, but the trainer takes named choices",
                hint=f"list choices: from {', '.join(map(str, declared.choices))}",
                path=source,
            )
        for value in axis.choices:
            _check_choice(value, declared, where, source)
        return CheckedAxis(
            key, "choice", None, None, False, None, tuple(axis.choices), declared.source
        )
    values = list(axis.choices) if axis.choices is not None else [axis.low, axis.high]
    for value in values:
        _check_number(value, declared, where, source)
    if axis.choices is not None:
        return CheckedAxis(
            key, "choice", None, None, False, None, tuple(axis.choices), declared.source
        )
    assert axis.low is not None and axis.high is not None
    if declared.kind == "int":
        if not (float(axis.low).is_integer() and float(axis.high).is_integer()):
            raise SpecError(
                f"{where} takes whole numbers, got {axis.low}–{axis.high}",
                hint="use whole numbers for low and high",
                path=source,
            )
        if axis.step is not None and not float(axis.step).is_integer():
            raise SpecError(f"{where}: step must be a whole number", hint="", path=source)
    return CheckedAxis(
        key, declared.kind, axis.low, axis.high, axis.log, axis.step, (), declared.source
    )


def _check_choice(value: Any, declared: SearchKey, where: str, source: Path | str) -> None:
    if value in declared.choices:
        return
    pattern = declared.open_pattern
    if pattern and isinstance(value, str) and re.fullmatch(pattern, value):
        return
    if isinstance(value, str) and value.lower() in {str(c).lower() for c in declared.choices}:
        return
    raise SpecError(
        f"{where}: {value!r} is not a value the trainer accepts",
        hint=f"choose from {', '.join(map(str, declared.choices))}"
        + (" or a class by dotted path" if declared.open_pattern else "")
        + f" ({declared.source})",
        path=source,
    )


def _check_number(value: Any, declared: SearchKey, where: str, source: Path | str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SpecError(f"{where}: {value!r} is not a finite number", hint="", path=source)
    low, high = declared.minimum, declared.maximum
    below = low is not None and (value < low or (declared.exclusive_minimum and value == low))
    above = high is not None and value > high
    if below or above:
        bound = (
            f"{'above' if declared.exclusive_minimum else 'at least'} {low}"
            if below
            else f"at most {high}"
        )
        raise SpecError(
            f"{where}: {value} is outside the trainer's limits (must be {bound})",
            hint=f"narrow the range to {_limits(declared)} ({declared.source})",
            path=source,
        )


def _limits(declared: SearchKey) -> str:
    low = (
        "–∞"
        if declared.minimum is None
        else (f"({declared.minimum}" if declared.exclusive_minimum else f"[{declared.minimum}")
    )
    high = "∞)" if declared.maximum is None else f"{declared.maximum}]"
    return f"{low}, {high}"
