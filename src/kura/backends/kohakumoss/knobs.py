"""KohakuMoss knobs: Kura's typed values, checked before KohakuMoss sees them.

A kogine config's knobs are the train script's module-level UPPER_CASE globals. Kura
checks every value it writes against the type of that knob's default in the installed
``scripts/train/moss.py`` (read through the helper), because KohakuMoss's own checker
crashes with a ``TypeError`` on a value of the wrong type instead of reporting it. Unknown
names are refused here too, with the closest known names.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kura.errors import InvalidInput

__all__ = [
    "KnobValue",
    "MossRecipe",
    "check_knobs",
    "knob_problems",
    "recipe_knobs",
]

KnobValue = str | int | float | bool | None | Sequence["KnobValue"] | Mapping[str, "KnobValue"]
"""A value a kogine config can hold as a Python literal."""

_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_ACCEPTS: Mapping[str, tuple[type, ...]] = {
    "bool": (bool,),
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "sequence": (list, tuple),
    "mapping": (dict,),
}


def _literal_problem(value: object) -> str | None:
    """Why ``value`` cannot be written as a Python literal, or None."""
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} is not a finite number"
    if isinstance(value, (list, tuple)):
        for item in value:
            problem = _literal_problem(item)
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"mapping key {key!r} is not a string"
            problem = _literal_problem(item)
            if problem:
                return problem
        return None
    return f"a {type(value).__name__} cannot be written into a config"


def knob_problems(knobs: Mapping[str, object], types: Mapping[str, str]) -> list[str]:
    """Every problem of ``knobs`` against the knob types of the installed train script."""
    problems = []
    for name, value in knobs.items():
        if not _NAME.match(name):
            problems.append(f"{name}: knob names are UPPER_CASE (a lower-case name is not a knob)")
            continue
        if name not in types:
            near = difflib.get_close_matches(name, list(types), n=3)
            also = f" (did you mean {', '.join(near)}?)" if near else ""
            problems.append(f"{name}: unknown KohakuMoss knob{also}")
            continue
        literal = _literal_problem(value)
        if literal:
            problems.append(f"{name}: {literal}")
            continue
        want = types[name]
        accepts = _ACCEPTS.get(want)
        if accepts is None or value is None:
            continue  # a default of None / another type: KohakuMoss's checker decides
        if want in ("int", "float") and isinstance(value, bool):
            problems.append(f"{name}: expects {want}, got bool {value!r}")
        elif not isinstance(value, accepts):
            problems.append(f"{name}: expects {want}, got {type(value).__name__} {value!r}")
    return problems


def check_knobs(knobs: Mapping[str, object], types: Mapping[str, str], *, where: str) -> None:
    """Raise InvalidInput naming ``where`` (the run.yaml key) when any knob is wrong."""
    problems = knob_problems(knobs, types)
    if problems:
        raise InvalidInput(
            f"{where}: " + "; ".join(problems),
            hint="fix or remove the value; the knobs and their types are the globals of "
            "KohakuMoss's scripts/train/moss.py",
        )


@dataclass(frozen=True)
class MossRecipe:
    """The recipe values Kura owns, in Kura's terms (the run's ``training`` section)."""

    learning_rate: float
    steps: int
    rank: int
    alpha: float
    seed: int
    warmup_steps: int
    max_grad_norm: float | None
    save_every: int
    sample_every: int
    sample_prompts: tuple[str, ...]
    log_every: int = 10


def recipe_knobs(recipe: MossRecipe) -> dict[str, KnobValue]:
    """The recipe as KohakuMoss knobs. ``SCHEDULE`` keeps the base layer's cosine shape
    and sets only its warmup (KohakuMoss refuses a warmup at or past STEPS)."""
    knobs: dict[str, KnobValue] = {
        "LR": recipe.learning_rate,
        "STEPS": recipe.steps,
        "DIM": recipe.rank,
        "ALPHA": float(recipe.alpha),
        "SEED": recipe.seed,
        "SCHEDULE": {"mode": "cosine", "warmup": recipe.warmup_steps, "end": -1, "min_value": 0.1},
        "SAVE_EVERY": recipe.save_every,
        "SAMPLE_EVERY": recipe.sample_every,
        "LOG_EVERY": recipe.log_every,
    }
    if recipe.max_grad_norm is not None:
        knobs["GRAD_CLIP"] = recipe.max_grad_norm
    if recipe.sample_prompts:
        knobs["SAMPLE_PROMPTS"] = list(recipe.sample_prompts)
    return knobs
