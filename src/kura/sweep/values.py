"""What a sweep's modules pass each other about one trial, as typed values.

The worker records each trial in the study's user attributes (JSON: ``kura.estimate`` from
the memory gate, ``kura.stopped`` from following, ``kura.objective`` from scoring,
``kura.artifacts`` from gathering the run's files) and in ``trial.json``. Everything that
reads them back (the report and its rows, the sweep page, ``kura sweep collect``) reads
them through these models: a missing attribute is None, a damaged one an InvalidInput
naming the trial and the attribute (Kura alone writes them). ``to_dict`` gives each back as
the document it was read from (the ``--json`` contract is unchanged).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from kura.errors import InvalidInput

__all__ = [
    "Artifact",
    "CacheNote",
    "EarlyStop",
    "ParamValue",
    "RecordedScore",
    "StepTimes",
    "TrialEstimate",
    "Winner",
    "read_attr",
    "read_attr_list",
]

ParamValue = bool | int | float | str | None
"""One axis value of a trial, as Optuna's params and the space's choices hold it."""


class _Recorded(BaseModel):
    """A value the worker recorded; fields it may add later are ignored when read back."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    def to_dict(self) -> dict[str, object]:
        return self.model_dump(mode="json")


class TrialEstimate(_Recorded):
    """The memory gate's reading of a trial's plan on the worker's GPU class
    (:func:`kura.sweep.gate.gate`): the class, its usable memory, the estimate's upper edge
    and peak (GiB; None when unknown), and the fit ladder's aids."""

    gpu: str
    usable_gib: float
    upper_gib: float | None = None
    peak_gib: float | None = None
    aids: tuple[str, ...] = ()


class EarlyStop(_Recorded):
    """Why a trial was stopped before its last step (:func:`kura.sweep.follow.follow_trial`):
    ``by`` the pruner or a lost lease, ``why`` in words, the ``step`` and ``loss`` it was
    stopped at (None for a lost lease)."""

    by: str
    why: str
    step: int | None = None
    loss: float | None = None


class RecordedScore(_Recorded):
    """A scored trial's objective as recorded (:meth:`kura.sweep.objective.Score.to_dict`):
    the value the study was told (None for a pareto trial), the loss it came from and the
    judge's scores."""

    value: float | None = None
    metric: str | None = None
    loss: float | None = None
    judge: str | None = None
    judge_score: float | None = None
    judge_scores: tuple[float, ...] = ()
    note: str | None = None
    mode: str | None = None
    values: tuple[float, ...] | None = None


class Artifact(_Recorded):
    """One file of a trial linked under the sweep folder (``kura sweep collect`` checks it
    by its sha256): ``path`` relative to the sweep folder."""

    path: str
    size: int
    sha256: str


class CacheNote(_Recorded):
    """What a trial did with the sweep's shared caches (:mod:`kura.sweep.caches`): the
    cache key, the steps it computed and stored, or the trial it reused them from."""

    key: str
    computed: tuple[str, ...] = ()
    reused_from: str | None = None
    files: int | None = None
    skipped: tuple[str, ...] = ()


class StepTimes(_Recorded):
    """The measured seconds per step of one GPU class's trials (never compared across
    classes): how many trials measured it and their median."""

    trials: int
    median_seconds_per_step: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> StepTimes:
        return cls(trials=len(seconds), median_seconds_per_step=statistics.median(seconds))


class Winner(_Recorded):
    """``sweeps/<id>/winner.json``: the trial ``kura sweep report`` (or ``promote``) chose
    and what it scored, the start of later sweeps on the same trainer × architecture × task
    (:mod:`kura.sweep.warmstart`). ``backend`` is None in a file written before it was
    recorded (the space then checks its values)."""

    sweep: str
    number: int
    params: dict[str, ParamValue]
    architecture: str
    task: str | None = None
    backend: str | None = None
    objective: float | None = None
    values: tuple[float, ...] | None = None

    def to_dict(self) -> dict[str, object]:
        """The file's document: the score the sweep's mode has (objective or values)."""
        return self.model_dump(mode="json", exclude_none=True, exclude={"task"}) | {
            "task": self.task
        }


_Model = TypeVar("_Model", bound=_Recorded)


def read_attr(
    attrs: Mapping[str, object], key: str, model: type[_Model], *, trial: int
) -> _Model | None:
    """The user attribute ``key`` of trial ``trial`` as ``model``; None when not recorded."""
    raw = attrs.get(key)
    if raw is None or raw == {}:
        return None
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise _damaged(trial, key, error) from None


def read_attr_list(
    attrs: Mapping[str, object], key: str, model: type[_Model], *, trial: int
) -> tuple[_Model, ...]:
    """The list attribute ``key`` of trial ``trial``, each item as ``model``."""
    raw = attrs.get(key) or []
    if not isinstance(raw, list):
        raise _damaged(trial, key, f"a list was expected, not {type(raw).__name__}")
    try:
        return tuple(model.model_validate(item) for item in raw)
    except ValidationError as error:
        raise _damaged(trial, key, error) from None


def _damaged(trial: int, key: str, error: object) -> InvalidInput:
    return InvalidInput(
        f"trial {trial}'s {key} in the study is damaged: {error}",
        hint="Kura's worker alone writes it; restore the study from the machine that ran "
        "the trial, or re-queue the trial",
    )
