"""Opening a sweep's Optuna study, and the checks that keep a study honest on resume.

The study records what it was started with (``kura.space_digest``, ``kura.release``,
``kura.backend``, ``kura.base_run``); every worker compares them with the sweep folder it
runs from and with the backend it imports, and refuses a study whose space or trainer
release changed since it started (its trials' scores would not be comparable). The objective
mode is part of the space (and of its digest); the study's own directions are checked too
(one for ``weighted``, minimize loss and maximize judge for ``pareto``), so a study made in
one mode never runs in the other.
"""

from __future__ import annotations

from typing import Any, Literal

from kura.errors import CheckFailed
from kura.sweep.records import SweepRecord, sweep_dir
from kura.sweep.storage import open_storage, redact
from kura.workspace import Workspace

__all__ = ["check_mode", "check_resumable", "load_study", "quiet_optuna", "study_directions"]


Direction = Literal["minimize", "maximize"]


def study_directions(mode: str) -> tuple[Direction, ...]:
    """Optuna's directions for an objective mode: the loss (down), the judge (up)."""
    return ("minimize", "maximize") if mode == "pareto" else ("minimize",)


def quiet_optuna() -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


def load_study(
    workspace: Workspace,
    sweep: SweepRecord,
    *,
    storage_url: str | None = None,
    sampler: Any = None,
    pruner: Any = None,
) -> Any:
    import optuna

    quiet_optuna()
    url = storage_url or sweep.storage
    storage = open_storage(url, sweep_dir(workspace, sweep.id))
    try:
        return optuna.load_study(
            study_name=sweep.study, storage=storage, sampler=sampler, pruner=pruner
        )
    except KeyError:
        raise CheckFailed(
            f"the storage {redact(url)} holds no study {sweep.study!r}",
            hint="pass the --storage the sweep was created with (sweep.json names it, "
            "without its password)",
        ) from None


def check_resumable(study: Any, sweep: SweepRecord, release: str, mode: str) -> None:
    attrs = study.user_attrs
    if attrs.get("kura.space_digest") != sweep.space_digest:
        raise CheckFailed(
            f"sweep {sweep.id}: the space changed since the study started "
            f"({attrs.get('kura.space_digest', '?')[:19]}… → {sweep.space_digest[:19]}…)",
            hint="a changed space makes earlier trials incomparable: start a new sweep "
            "(`kura sweep new --from RUN --space FILE`); this one's trials are kept",
        )
    if attrs.get("kura.release") != release:
        raise CheckFailed(
            f"sweep {sweep.id}: the trainer release changed since the study started "
            f"({attrs.get('kura.release')} → {release})",
            hint="results of two releases are not comparable: start a new sweep on this "
            "release, or install release " + str(attrs.get("kura.release")) + " to resume this "
            "one; its trials are kept",
        )
    check_mode(study, sweep, mode)


def check_mode(study: Any, sweep: SweepRecord, mode: str) -> None:
    """The study's directions are the objective mode's (see the module docstring)."""
    directions = tuple(d.name.lower() for d in study.directions)
    if directions != study_directions(mode):
        made = "pareto" if len(directions) == 2 else "weighted"
        raise CheckFailed(
            f"sweep {sweep.id}: its study was created for objective.mode {made} "
            f"({', '.join(directions)}), but the space says {mode}",
            hint="the mode cannot change in a running sweep: start a new sweep (`kura sweep "
            "new --from RUN --space FILE`); this one's trials are kept",
        )
