"""`kura run new --from RUN`: a new run with an earlier run's intent.

A run launches once. After it was cancelled, or failed for a reason its approval holds no
contingency for, the way forward is a new run drafted from the same intent: the same
datasets, bundle, trainer and task, and every value the person set on the command line
(run.yaml's provenance says ``your instruction`` for those). Everything else is drafted
again, as ``run new`` drafts it, so a value the fit ladder or a contingency changed in the
earlier run is decided afresh by the new run's own plan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kura.runs.store import load_run
from kura.workspace import Workspace

__all__ = ["RunIntent", "intent_of"]

_INSTRUCTION = "your instruction"
"""How run.yaml's provenance (and ``backend.reasons``) marks a value a person set."""


@dataclass(frozen=True)
class RunIntent:
    """What ``run new`` needs to draft a run like ``source``: its arguments."""

    source: str
    datasets: tuple[str, ...]
    base: str
    backend: str
    task: str | None
    sets: tuple[str, ...]
    """``KEY=VALUE`` for each value the person set, the value as JSON (a YAML flow value)."""


def intent_of(workspace: Workspace, run_id: str) -> RunIntent:
    """The intent of run ``run_id``, read from its run.yaml."""
    spec, document = load_run(workspace, run_id)
    provenance: Mapping[str, Any] = document.get("provenance") or {}
    reasons: Mapping[str, Any] = (document.get("backend") or {}).get("reasons") or {}
    keys = [k for k, why in provenance.items() if str(why).startswith(_INSTRUCTION)]
    keys += [
        f"backend.config.{k}"
        for k, why in reasons.items()
        if str(why).startswith(_INSTRUCTION) and f"backend.config.{k}" not in keys
    ]
    sets = tuple(f"{key}={_flow(_dotted(document, key))}" for key in keys)
    return RunIntent(
        source=run_id,
        datasets=tuple(d.name for d in spec.datasets),
        base=spec.model.base,
        backend=spec.backend.name,
        task=spec.task,
        sets=sets,
    )


def _dotted(document: Mapping[str, Any], key: str) -> Any:
    value: Any = document
    for part in key.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _flow(value: Any) -> str:
    """``value`` as ``--set`` reads it back (JSON is a YAML flow value)."""
    return json.dumps(value, ensure_ascii=False, default=str)
