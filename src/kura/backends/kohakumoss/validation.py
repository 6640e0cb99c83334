"""KohakuMoss's fixed-noise validation loss over run.yaml's ``validation`` datasets.

KohakuMoss (``training/callbacks/evaluate.py`` ``Validation``) scores the first
``VALIDATION['batches']`` batches of ``VALIDATION['datasets']`` at each fixed sigma of
``VALIDATION['sigmas']`` with noise reseeded from ``VALIDATION['seed']``, every
``VALIDATE_EVERY`` steps, and puts ``val_loss`` (the mean over sigmas) and ``val_loss@<σ>``
into the step's metrics; ``LogMetrics`` (``callbacks/monitor.py``) writes them into the next
``metrics.jsonl`` row it logs and clears them. The validation set is its own data config
(``build/loop.py validation_data_config``: the run's data knobs over those datasets, no text
dropout), so its items are never in ``DATASETS`` and never trained on.

When it fires: ``callbacks/runner.py`` runs a callback at every step that is a multiple of
its ``every``; ``Validation`` has no ``edges``, so unlike ``LogMetrics`` it does not fire at
the last step by itself. Kura therefore writes a ``VALIDATE_EVERY`` that divides ``STEPS``
(the last step is validated: a sweep's objective is the end-of-run loss) and is a multiple
of the metrics cadence (``METRICS_EVERY``, else ``LOG_EVERY``) or ``STEPS`` itself, so every
validation lands in the row of its own step. The default is the smallest such divisor at or
above ``STEPS / 4``: at most four validations, the last at the final step.

The seed is fixed (0, KohakuMoss's default) rather than the run's ``training.seed``, so
trials of one sweep that vary their seed still compare on the same noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from kura.errors import SpecError

__all__ = [
    "DEFAULT_BATCHES",
    "DEFAULT_SIGMAS",
    "VALIDATION_SEED",
    "MossValidationSettings",
    "default_every",
    "validation_settings",
]

DEFAULT_SIGMAS = (0.25, 0.5, 0.75)
"""``build/loop.py``: ``VALIDATION.get("sigmas", (0.25, 0.5, 0.75))``."""
DEFAULT_BATCHES = 4
"""``entry.py _validation_batches``: ``VALIDATION.get("batches", 4)``."""
VALIDATION_SEED = 0
"""``build/loop.py``: ``VALIDATION.get("seed", 0)``; Kura writes it explicitly."""
_SETTABLE = frozenset({"sigmas", "seed", "batches"})


@dataclass(frozen=True)
class MossValidationSettings:
    """``VALIDATE_EVERY`` and the ``VALIDATION`` keys besides ``datasets``."""

    every: int
    sigmas: tuple[float, ...] = DEFAULT_SIGMAS
    seed: int = VALIDATION_SEED
    batches: int = DEFAULT_BATCHES
    source: str = ""
    """Why ``every`` is what it is (the plan shows it)."""

    @property
    def forward_passes(self) -> int:
        """Forward passes (no gradient) of one validation: every batch at every sigma."""
        return len(self.sigmas) * self.batches

    def validations(self, steps: int) -> int:
        return steps // self.every


def _allowed(steps: int, cadence: int, every: int) -> bool:
    return steps % every == 0 and (every % cadence == 0 or every == steps)


def default_every(steps: int, cadence: int) -> int:
    """The smallest divisor of ``steps`` at or above ``steps / 4`` that is a multiple of the
    metrics ``cadence`` (or ``steps`` itself, which the last row always logs)."""
    low = max(1, math.ceil(steps / 4))
    return next(d for d in range(low, steps + 1) if _allowed(steps, cadence, d))


def _int(value: object, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(
            f"backend.config.{key} must be a whole number ≥ {minimum}, not {value!r}",
            hint=f"e.g. --set backend.config.{key}={max(minimum, 4)}",
        )
    return value


def _sigmas(value: object) -> tuple[float, ...]:
    items = value if isinstance(value, (list, tuple)) else None
    if not items or any(
        isinstance(s, bool) or not isinstance(s, (int, float)) or not 0.0 < s < 1.0 for s in items
    ):
        raise SpecError(
            f"backend.config.VALIDATION.sigmas must be a non-empty list of noise levels "
            f"between 0 and 1, not {value!r}",
            hint="e.g. [0.25, 0.5, 0.75] (KohakuMoss's default)",
        )
    return tuple(float(s) for s in items)


def validation_settings(
    steps: int,
    cadence: int,
    *,
    every: object | None,
    extra: object | None,
    datasets: tuple[str, ...],
) -> MossValidationSettings | None:
    """The validation a run's ``backend.config`` (``VALIDATE_EVERY``, ``VALIDATION``) and
    run.yaml ``validation`` (``datasets``) ask for; None when neither asks for any."""
    if not datasets:
        if every not in (None, 0) or extra not in (None, {}):
            raise SpecError(
                "backend.config sets VALIDATE_EVERY/VALIDATION, but run.yaml lists no "
                "validation datasets for KohakuMoss to score",
                hint="add held-out datasets under run.yaml `validation:` (never one that "
                "is trained on), or remove the keys",
            )
        return None
    options: Mapping[str, object] = {}
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise SpecError(
                f"backend.config.VALIDATION must be a mapping, not {extra!r}",
                hint="e.g. {sigmas: [0.25, 0.5, 0.75], batches: 4}",
            )
        options = extra
        unknown = sorted(set(options) - _SETTABLE)
        if unknown:
            raise SpecError(
                f"backend.config.VALIDATION: {', '.join(map(str, unknown))} is not set there"
                + (
                    " (Kura writes VALIDATION['datasets'] from run.yaml `validation`)"
                    if "datasets" in unknown
                    else ""
                ),
                hint="VALIDATION takes sigmas, seed and batches; list the held-out datasets "
                "under run.yaml `validation:`",
            )
    names = ", ".join(datasets)
    if every is None:
        chosen = default_every(steps, cadence)
        source = (
            f"Kura's default: the smallest divisor of STEPS {steps} at or above STEPS/4 that "
            f"is a multiple of the metrics cadence {cadence} (or STEPS), so the last step is "
            "validated (KohakuMoss validates at multiples of VALIDATE_EVERY only)"
        )
    else:
        chosen = _int(every, "VALIDATE_EVERY", 0)
        if chosen == 0:
            raise SpecError(
                f"backend.config.VALIDATE_EVERY is 0, but run.yaml lists validation datasets "
                f"({names}): KohakuMoss would report no held-out loss",
                hint="remove VALIDATE_EVERY (Kura picks a cadence) or remove run.yaml `validation`",
            )
        if not _allowed(steps, cadence, chosen):
            raise SpecError(
                f"backend.config.VALIDATE_EVERY {chosen} must divide STEPS {steps} (KohakuMoss "
                "validates only at its multiples, so the last step would go unscored) and be "
                f"a multiple of the metrics cadence {cadence} (METRICS_EVERY, else LOG_EVERY), "
                "or equal STEPS",
                hint=f"e.g. --set backend.config.VALIDATE_EVERY={default_every(steps, cadence)}"
                " or remove it",
            )
        source = "backend.config.VALIDATE_EVERY (a person's choice)"
    return MossValidationSettings(
        every=chosen,
        sigmas=_sigmas(options["sigmas"]) if "sigmas" in options else DEFAULT_SIGMAS,
        seed=_int(options["seed"], "VALIDATION.seed", 0) if "seed" in options else VALIDATION_SEED,
        batches=(
            _int(options["batches"], "VALIDATION.batches", 1)
            if "batches" in options
            else DEFAULT_BATCHES
        ),
        source=source,
    )
