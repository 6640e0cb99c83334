"""Opening a sweep's Optuna study, and the checks that keep a study honest on resume.

The study records what it was started with (``kura.space_digest``, ``kura.release``,
``kura.backend``, ``kura.base_run``); every worker compares them with the sweep folder it
runs from and with the backend it imports, and refuses a study whose space or trainer
release changed since it started (its trials' scores would not be comparable).
"""

from __future__ import annotations

from typing import Any

from kura.errors import CheckFailed
from kura.sweep.records import SweepRecord, sweep_dir
from kura.sweep.storage import open_storage, redact
from kura.workspace import Workspace

__all__ = ["check_resumable", "load_study", "quiet_optuna"]


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


def check_resumable(study: Any, sweep: SweepRecord, release: str) -> None:
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
