"""The objective, explicit and recorded: what a trial scored and from what.

``metric`` is the held-out loss (the trainer's loss on the validation split Kura carved and
kept out of training) or the final training loss; lower is better. A judge, when configured,
scores the trial's samples from 0 to 1 (higher is better; the same prompts and seeds for every
trial, since the sample settings are never axes): ``ratings`` reads the human ratings
``kura run evaluate`` (or the web page) wrote into the trial's notes.md (1–5 → 0–1);
``module:function`` is a scorer of the user's own, called as ``function(run_dir, samples)``
returning a score or one score per sample. Nothing is downloaded.

``mode: weighted``: with a judge score the value is ``(1 − w)·loss + w·(1 − score)``; without
one it is the loss, and the record says so. ``mode: pareto``: the study is told two values,
``(loss, judge score)`` (``Score.values``; ``value`` is the loss, for the records); without a
judge score there is nothing to tell (``values`` None) and the worker says so.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kura.bounded import read_text
from kura.errors import CheckFailed, UsageError
from kura.sweep.space import Objective

__all__ = ["Score", "judge_scores", "ratings", "score"]

_RATING = re.compile(r"^- rating: ([1-5])/5\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Score:
    value: float
    metric: str
    loss: float
    judge: str | None
    judge_score: float | None
    judge_scores: tuple[float, ...]
    note: str
    mode: str = "weighted"
    values: tuple[float, ...] | None = None
    """What the study is told: ``(value,)`` weighted, ``(loss, judge score)`` pareto, None
    when a pareto trial has no judge score."""

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "value": self.value,
            "metric": self.metric,
            "loss": self.loss,
            "judge": self.judge,
            "judge_score": self.judge_score,
            "judge_scores": list(self.judge_scores),
            "note": self.note,
        }
        if self.mode == "pareto":
            document["mode"] = self.mode
            document["values"] = None if self.values is None else list(self.values)
        return document


def ratings(run_dir: Path) -> tuple[float, ...]:
    """Human ratings of a run (1–5 in notes.md) as 0–1 scores, oldest first."""
    notes = run_dir / "notes.md"
    if not notes.is_file():
        return ()
    return tuple((int(n) - 1) / 4 for n in _RATING.findall(read_text(notes, what="notes file")))


def judge_scores(judge: str, run_dir: Path, samples: Sequence[Path]) -> tuple[float, ...]:
    if judge == "ratings":
        found = ratings(run_dir)
        return found[-1:] if found else ()
    module_name, sep, name = judge.partition(":")
    if not sep:
        raise UsageError(
            f"objective.judge {judge!r} is neither `ratings` nor `module:function`",
            hint="name a scorer as module:function, importable on every worker",
        )
    try:
        function = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise CheckFailed(
            f"objective.judge {judge}: cannot load it ({exc})",
            hint="install the scorer's module on this worker, or change objective.judge",
        ) from None
    result = function(run_dir, tuple(samples))
    values = tuple(float(v) for v in (result if isinstance(result, list | tuple) else [result]))
    bad = [v for v in values if not (math.isfinite(v) and 0.0 <= v <= 1.0)]
    if bad:
        raise CheckFailed(
            f"objective.judge {judge} returned {bad[0]!r}; a judge scores from 0 to 1",
            hint="fix the scorer",
        )
    return values


def score(
    objective: Objective,
    *,
    heldout_loss: float | None,
    train_loss: float | None,
    run_dir: Path,
    samples: Sequence[Path],
) -> Score:
    """The trial's objective; CheckFailed when the metric was never reported."""
    loss = heldout_loss if objective.metric == "heldout_loss" else train_loss
    if loss is None or not math.isfinite(loss):
        raise CheckFailed(
            f"the trainer reported no {objective.metric.replace('_', ' ')} "
            f"({'none' if loss is None else loss})",
            hint="read the trial's logs (`kura run logs RUN`)",
        )
    if objective.judge is None:
        return Score(
            loss,
            objective.metric,
            loss,
            None,
            None,
            (),
            "loss only: no judge set",
            values=(loss,),
        )
    values = judge_scores(objective.judge, run_dir, samples)
    if objective.mode == "pareto":
        if not values:
            return Score(
                loss,
                objective.metric,
                loss,
                objective.judge,
                None,
                (),
                f"judge {objective.judge} has no score for this trial",
                mode="pareto",
            )
        mean = sum(values) / len(values)
        return Score(
            loss,
            objective.metric,
            loss,
            objective.judge,
            mean,
            values,
            f"pareto: {objective.metric} (minimized) and judge (maximized)",
            mode="pareto",
            values=(loss, mean),
        )
    if not values:
        return Score(
            loss,
            objective.metric,
            loss,
            objective.judge,
            None,
            (),
            f"loss only: judge {objective.judge} has no score for this trial yet",
            values=(loss,),
        )
    mean = sum(values) / len(values)
    weight = objective.judge_weight
    value = (1 - weight) * loss + weight * (1 - mean)
    return Score(
        value,
        objective.metric,
        loss,
        objective.judge,
        mean,
        values,
        f"(1 − {weight})·{objective.metric} + {weight}·(1 − judge)",
        values=(value,),
    )
