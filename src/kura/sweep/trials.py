"""A trial is an ordinary Kura run: ``runs/<sweep>-t<NNNN>/`` with its own run.yaml, plan,
lock and approval, made from the base run by changing only what the sweep's envelope allows.

What a trial may change: the axes' keys; the other length key when an axis sets the length
(``max_steps`` replaces ``epochs`` and back); the datasets (the carved training part) and
``validation`` (the carved held-out part); ``execution.gpu_class`` (the worker's GPU); the
fit ladder's keys in ``backend.config`` with their reasons; ``id`` and ``provenance``.
Anything else differing is a refusal (:func:`check_envelope`).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from kura.errors import CheckFailed
from kura.fsutil import atomic_write_text
from kura.plainyaml import read_yaml
from kura.runs.diffs import diff_values
from kura.runs.store import read_run, run_file
from kura.schema.base import plain, set_dotted, validate_spec
from kura.schema.run import RunSpec
from kura.sweep.records import SweepRecord
from kura.workspace import Workspace
from kura.yamlio import dump_yaml

__all__ = [
    "allowed_changes",
    "check_envelope",
    "make_trial_run",
    "trial_document",
    "trial_of_run",
    "trial_run_id",
]

_LENGTH = {"training.max_steps": "training.epochs", "training.epochs": "training.max_steps"}


def trial_run_id(sweep_id: str, number: int) -> str:
    return f"{sweep_id}-t{number:04d}"


_TRIAL_RUN = re.compile(r"^(?P<sweep>.+)-t(?P<number>\d{4,})$")


def trial_of_run(run_id: str) -> tuple[str, int] | None:
    """The sweep and trial number :func:`trial_run_id` made ``run_id`` from; None for a run
    no sweep made."""
    named = _TRIAL_RUN.match(run_id)
    return None if named is None else (named["sweep"], int(named["number"]))


def trial_document(
    base: dict[str, Any],
    sweep: SweepRecord,
    params: dict[str, Any],
    *,
    run_id: str,
    gpu_class: str | None,
    source: str,
) -> dict[str, Any]:
    """The trial's run.yaml as plain data (the base run's, with the sweep's changes)."""
    document = copy.deepcopy(plain(base))
    document["id"] = run_id
    provenance = document.setdefault("provenance", {})
    for key, value in params.items():
        set_dotted(document, key, value)
        provenance[key] = f"sweep {sweep.id} ({source})"
        other = _LENGTH.get(key)
        if other is not None:
            set_dotted(document, other, None)
            provenance[other] = f"sweep {sweep.id}: {key} is searched"
    if sweep.split.train:
        uses = document["datasets"]
        document["validation"] = [
            {**copy.deepcopy(use), "name": sweep.split.validation[use["name"]], "repeats": 1}
            for use in uses
        ]
        document["datasets"] = [
            {**copy.deepcopy(use), "name": sweep.split.train[use["name"]]} for use in uses
        ]
    if gpu_class is not None:
        document.setdefault("execution", {})["gpu_class"] = gpu_class
    return dict(document)


def make_trial_run(workspace: Workspace, document: dict[str, Any]) -> str:
    """Write ``runs/<id>/run.yaml``; an existing trial folder is never overwritten."""
    run_id = str(document["id"])
    path = workspace.run_dir(run_id) / "run.yaml"
    validate_spec(RunSpec, document, source=f"runs/{run_id}/run.yaml (a sweep trial)")
    with workspace.lock():
        if path.parent.exists():
            raise CheckFailed(
                f"trial run {run_id} already exists; a trial number is never run twice",
                hint="this is a bug or a hand-made folder: move runs/"
                f"{run_id} aside (its files are kept) and start the worker again",
            )
        path.parent.mkdir(parents=True)
        atomic_write_text(path, _HEADER + dump_yaml(document))
    return run_id


def allowed_changes(params: dict[str, Any], ladder_keys: frozenset[str]) -> tuple[str, ...]:
    """Path prefixes a trial may change (see the module docstring)."""
    prefixes = ["id", "provenance", "datasets", "validation", "execution.gpu_class"]
    for key in params:
        prefixes.append(key)
        if key in _LENGTH:
            prefixes.append(_LENGTH[key])
    for key in ladder_keys:
        prefixes += [f"backend.config.{key}", f"backend.reasons.{key}"]
    return tuple(prefixes)


def check_envelope(
    workspace: Workspace,
    run_id: str,
    template: dict[str, Any],
    params: dict[str, Any],
    ladder_keys: frozenset[str],
) -> None:
    """Refuse a planned trial whose run.yaml left the approved envelope."""
    current = read_yaml(run_file(workspace, run_id))
    allowed = allowed_changes(params, ladder_keys)
    stray = [
        change
        for change in diff_values(template, current)
        if not any(change == p or change.startswith((f"{p} ", f"{p}.")) for p in allowed)
    ]
    if stray:
        raise CheckFailed(
            f"trial {run_id} leaves the sweep's approved envelope: {'; '.join(stray[:5])}",
            hint="a trial may change only the axes and the fit ladder's keys; plan and approve "
            "the sweep again if the base run must change",
        )
    read_run(workspace, run_id)


_HEADER = (
    "# Kura run: a sweep trial. Made by `kura sweep worker` from the base run; the values the\n"
    "# sweep changed say so under `provenance`. It runs under the sweep's one approval.\n"
)
