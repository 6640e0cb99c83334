"""The fit ladder: the fastest choice of a backend's memory aids that fits every step.

One walker for every backend. A backend describes its aids as data
(:class:`~kura.backends.base.MemoryAid`) and estimates any choice of them
(:class:`~kura.backends.base.FitProblem`); this module decides. The recipe itself is never
changed here: aids are speed or memory trade-offs only (DESIGN invariant 3).

1. The baseline (no aid) fits: no aid, whatever else would be faster to say.
2. Otherwise every combination of the plain aids' levels is estimated; one that does not fit
   is tried again with each counted aid (block swap) at the fewest units that fit, found by
   bisection because memory falls with every unit. The fastest fitting choice wins; choices
   within :data:`TIE_TOLERANCE` of it count as equally fast, and among them a preferred aid
   (a meaning-preserving artifact such as fp8 weights) wins, then fewer aids, then less host
   RAM. A preferred aid the others fit without at no loss of speed is dropped again.
3. The chosen aids are applied one at a time in rung order, each with its reason and its
   slowdown; a rung that crosses :data:`ASK_FIRST_SLOWDOWN` needs the person's yes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from kura.backends.base import AidChoice, Evaluation, FitProblem, MemoryAid, Rung

__all__ = [
    "ASK_FIRST_SLOWDOWN",
    "CHOICE_RULE",
    "TIE_TOLERANCE",
    "Alternative",
    "LadderResult",
    "walk",
]

ASK_FIRST_SLOWDOWN = 2.0
"""A memory aid that makes a step this much slower needs the user's yes."""

TIE_TOLERANCE = 0.03
"""Choices this close to the fastest count as equally fast (the estimators' own noise)."""


CHOICE_RULE = (
    "the fastest combination of memory aids that fits; within 3 % of the fastest, "
    "meaning-preserving aids (fp8 weights) first, then fewer aids, then less host RAM"
)
"""How the walker chooses, as the plan states it."""

MAX_ALTERNATIVES = 8


@dataclass(frozen=True)
class Alternative:
    """One combination that fits, as the plan lists it beside the chosen one."""

    aids: Mapping[str, object]
    peak_gib: float | None
    upper_gib: float | None
    host_ram_gib: float
    step_seconds: float | None
    chosen: bool
    first_sufficient: bool
    """The first combination that fits when aids are added one rung at a time in ladder
    order (the rule a person applies by hand); shown when it differs from the chosen."""

    def to_dict(self) -> dict[str, object]:
        return {
            "aids": dict(self.aids),
            "peak_gib": None if self.peak_gib is None else round(self.peak_gib, 2),
            "upper_gib": None if self.upper_gib is None else round(self.upper_gib, 2),
            "host_ram_gib": round(self.host_ram_gib, 1),
            "step_seconds": None if self.step_seconds is None else round(self.step_seconds, 3),
            "chosen": self.chosen,
            "first_sufficient": self.first_sufficient,
        }


@dataclass(frozen=True)
class LadderResult:
    """The walker's answer: the choice, its evaluation and the rungs that led there.

    ``fits`` False means no choice fits: ``choice`` is then the baseline and ``evaluation``
    None (the backend says what would help, see ``FitProblem.when_nothing_fits``)."""

    fits: bool
    choice: AidChoice
    evaluation: Evaluation | None
    rungs: tuple[Rung, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    alternatives: tuple[Alternative, ...] = ()
    """Every fitting combination found (fastest first, at most ``MAX_ALTERNATIVES``)."""

    @property
    def ask_first(self) -> bool:
        return any(rung.ask_first for rung in self.rungs)


class _Evaluator:
    """Cached evaluations and the fit rule, with an optional host-RAM ceiling."""

    def __init__(self, problem: FitProblem, host_ram_gib: float | None):
        self.problem = problem
        self.host_ram_gib = host_ram_gib
        self._cache: dict[tuple[tuple[str, object], ...], Evaluation | None] = {}

    def __call__(self, choice: AidChoice) -> Evaluation | None:
        key = tuple(sorted(choice.items()))
        if key not in self._cache:
            self._cache[key] = self.problem.evaluate(choice)
        return self._cache[key]

    def fits_device(self, choice: AidChoice) -> bool:
        result = self(choice)
        return result is not None and result.fits

    def fits(self, choice: AidChoice) -> bool:
        result = self(choice)
        if result is None or not result.fits:
            return False
        return self.host_ram_gib is None or result.host_ram_gib <= self.host_ram_gib

    def seconds(self, choice: AidChoice) -> float:
        result = self(choice)
        if result is None or result.step_seconds is None:
            return math.inf
        return result.step_seconds


def _is_on(aid: MemoryAid, choice: AidChoice) -> bool:
    return choice.get(aid.name, aid.off) != aid.off


def _requirements_met(aids: tuple[MemoryAid, ...], choice: AidChoice) -> bool:
    by_name = {a.name: a for a in aids}
    return all(
        all(_is_on(by_name[need], choice) for need in aid.requires if need in by_name)
        for aid in aids
        if _is_on(aid, choice)
    )


def _plain_choices(problem: FitProblem, base: AidChoice) -> Iterator[dict[str, object]]:
    """Every combination of the plain (not counted) aids' levels, counted aids off."""
    plain = [a for a in problem.aids if not a.counted]
    counted = {a.name: 0 for a in problem.aids if a.counted}
    for levels in itertools.product(*(a.levels for a in plain)):
        yield {**base, **counted, **{a.name: v for a, v in zip(plain, levels, strict=True)}}


def _fewest_units(
    choice: dict[str, object], aid: MemoryAid, evaluate: _Evaluator
) -> dict[str, object] | None:
    """``choice`` with the fewest units of the counted ``aid`` that fit, or None.

    Device memory falls with every unit and host RAM rises, so bisect on device memory and
    check host RAM once, at the fewest units (the least host RAM any fitting count needs)."""

    def at(units: int) -> dict[str, object]:
        return {**choice, aid.name: units}

    low, high = 1, aid.limit
    if high < 1 or not evaluate.fits_device(at(high)):
        return None
    while low < high:
        middle = (low + high) // 2
        if evaluate.fits_device(at(middle)):
            high = middle
        else:
            low = middle + 1
    return at(low) if evaluate.fits(at(low)) else None


def _fitting(problem: FitProblem, base: AidChoice, evaluate: _Evaluator) -> list[AidChoice]:
    counted = [a for a in problem.aids if a.counted]
    found: list[AidChoice] = []
    for choice in _plain_choices(problem, base):
        if not _requirements_met(problem.aids, {**choice, **{a.name: 1 for a in counted}}):
            continue
        if _requirements_met(problem.aids, choice) and evaluate.fits(choice):
            found.append(choice)
            continue
        for aid in counted:
            swapped = _fewest_units(choice, aid, evaluate)
            if swapped is not None and _requirements_met(problem.aids, swapped):
                found.append(swapped)
    return found


def _aid_count(problem: FitProblem, choice: AidChoice) -> int:
    return sum(1 for a in problem.aids if a.modifier_of is None and _is_on(a, choice))


def _choose(problem: FitProblem, found: list[AidChoice], evaluate: _Evaluator) -> AidChoice:
    """The fastest choice; within TIE_TOLERANCE of it, preferred aids, then fewer aids, then
    less host RAM win."""
    fastest = min(evaluate.seconds(c) for c in found)
    close = [c for c in found if evaluate.seconds(c) <= fastest * (1 + TIE_TOLERANCE)]
    preferred = [a for a in problem.aids if a.preferred]

    def preference(choice: AidChoice) -> tuple[bool, int, float, float]:
        result = evaluate(choice)
        assert result is not None
        return (
            not any(_is_on(a, choice) for a in preferred),
            _aid_count(problem, choice),
            result.host_ram_gib,
            evaluate.seconds(choice),
        )

    return min(close, key=preference)


def _without_needless(problem: FitProblem, choice: AidChoice, evaluate: _Evaluator) -> AidChoice:
    """Drop a preferred aid when the others fit without it at no loss of speed: every aid in
    a plan must have a reason."""
    for aid in problem.aids:
        if not (aid.preferred and _is_on(aid, choice)):
            continue
        plain = {**choice, aid.name: aid.off}
        if (
            _requirements_met(problem.aids, plain)
            and evaluate.fits(plain)
            and evaluate.seconds(plain) <= evaluate.seconds(choice) * (1 + TIE_TOLERANCE)
        ):
            choice = plain
    return choice


def _rungs(
    problem: FitProblem, base: AidChoice, chosen: AidChoice, evaluate: _Evaluator
) -> tuple[Rung, ...]:
    """The chosen aids applied one at a time in rung order, with reasons and slowdowns."""
    modifiers: dict[str, list[MemoryAid]] = {}
    for aid in problem.aids:
        if aid.modifier_of is not None:
            modifiers.setdefault(aid.modifier_of, []).append(aid)
    ordered = sorted(
        (a for a in problem.aids if a.modifier_of is None and _is_on(a, chosen)),
        key=lambda a: a.rung,
    )
    rungs: list[Rung] = []
    current: dict[str, object] = dict(base)
    before = evaluate(current)
    start = before.step_seconds if before is not None else None
    for aid in ordered:
        current[aid.name] = chosen[aid.name]
        for modifier in modifiers.get(aid.name, []):
            current[modifier.name] = chosen.get(modifier.name, modifier.off)
        after = evaluate(current)
        if before is None or after is None:
            raise ValueError(f"a step of the fit ladder ({aid.name}) is refused by the trainer")
        slowdown = _ratio(after.step_seconds, before.step_seconds)
        cumulative_before = _ratio(before.step_seconds, start)
        cumulative_after = _ratio(after.step_seconds, start)
        worst = after.worst
        rungs.append(
            Rung(
                aid=aid.name,
                change=problem.change(aid, current),
                reason=problem.reason(aid, before, after),
                slowdown=slowdown,
                ask_first=slowdown >= ASK_FIRST_SLOWDOWN
                or cumulative_before < ASK_FIRST_SLOWDOWN <= cumulative_after,
                peak_gib=worst.peak_gib or 0.0,
                upper_gib=worst.upper_gib or 0.0,
            )
        )
        before = after
    return tuple(rungs)


def _ratio(value: float | None, reference: float | None) -> float:
    if value is None or reference is None or reference <= 0:
        return 1.0
    return value / reference


def walk(problem: FitProblem, *, host_ram_gib: float | None = None) -> LadderResult:
    """The fastest choice of ``problem``'s aids that fits, and how it got there.

    ``host_ram_gib`` (this machine's RAM, when planning for its own GPU) rules out choices
    whose offloaded weights or states would not fit in host memory.
    """
    evaluate = _Evaluator(problem, host_ram_gib)
    base = problem.baseline()
    if evaluate(base) is None:
        raise ValueError("the recipe without memory aids is refused by the trainer")
    if evaluate.fits(base):
        headroom = ("Fits with headroom: no memory aid.",)
        return LadderResult(True, base, evaluate(base), notes=headroom)
    found = _fitting(problem, base, evaluate)
    if not found:
        return LadderResult(False, base, None)
    chosen = _without_needless(problem, _choose(problem, found, evaluate), evaluate)
    rungs = _rungs(problem, base, chosen, evaluate)
    first = _first_sufficient(problem, base, evaluate)
    alternatives = _alternatives(problem, [*found, chosen], chosen, first, evaluate)
    return LadderResult(True, chosen, evaluate(chosen), rungs, alternatives=alternatives)


def _on(problem: FitProblem, choice: AidChoice) -> dict[str, object]:
    return {a.name: choice[a.name] for a in problem.aids if _is_on(a, choice)}


def _first_sufficient(
    problem: FitProblem, base: AidChoice, evaluate: _Evaluator
) -> AidChoice | None:
    """Aids added one rung at a time, each at its strongest plain level (a counted aid at
    the fewest units that fit), until the run fits: the by-hand rule of the skill."""
    current: dict[str, object] = dict(base)
    for aid in sorted((a for a in problem.aids if a.modifier_of is None), key=lambda a: a.rung):
        if aid.counted:
            found = _fewest_units(current, aid, evaluate)
            if found is not None and _requirements_met(problem.aids, found):
                return found
            current[aid.name] = aid.limit
        else:
            current[aid.name] = aid.levels[-1]
        if not _requirements_met(problem.aids, current):
            continue
        if evaluate.fits(current):
            return dict(current)
    return None


def _alternatives(
    problem: FitProblem,
    found: list[AidChoice],
    chosen: AidChoice,
    first: AidChoice | None,
    evaluate: _Evaluator,
) -> tuple[Alternative, ...]:
    unique: dict[tuple[tuple[str, object], ...], AidChoice] = {}
    for choice in [*found, *([first] if first is not None else [])]:
        unique.setdefault(tuple(sorted(_on(problem, choice).items())), choice)
    rows = []
    for key, choice in unique.items():
        result = evaluate(choice)
        if result is None or not evaluate.fits(choice):
            continue
        worst = result.worst
        rows.append(
            Alternative(
                aids=dict(key),
                peak_gib=worst.peak_gib,
                upper_gib=worst.upper_gib,
                host_ram_gib=result.host_ram_gib,
                step_seconds=result.step_seconds,
                chosen=key == tuple(sorted(_on(problem, chosen).items())),
                first_sufficient=first is not None
                and key == tuple(sorted(_on(problem, first).items())),
            )
        )
    rows.sort(key=lambda r: (not r.chosen, r.step_seconds or math.inf))
    keep = rows[:MAX_ALTERNATIVES]
    keep += [r for r in rows[MAX_ALTERNATIVES:] if r.first_sufficient]
    return tuple(keep)
