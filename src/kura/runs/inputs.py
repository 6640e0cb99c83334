"""A run's plan inputs as the backend's estimator, fit ladder and bucket report read them.

Its own module because ``kura run plan`` (:mod:`kura.runs.plan`), ``kura run estimate``
(:mod:`kura.runs.estimate`) and ``kura dataset inspect --run`` (:mod:`kura.runs.buckets`)
all start from them: none of those imports another for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kura.runs.context import RunContext
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.backends.base import PlanInputs

__all__ = ["plan_inputs"]


def plan_inputs(workspace: Workspace, context: RunContext) -> PlanInputs:
    """The context's plan inputs with the run's prepared compile inputs, each dataset's
    facts and media as inspection sees them at the run's resolution (its buckets)."""
    from dataclasses import replace

    from kura.runs.compile import prepared_inputs
    from kura.runs.media import at_run_resolution

    snapshot = context.snapshot
    compiled = prepared_inputs(workspace, snapshot.spec, context.backend, snapshot.datasets)
    datasets, media = at_run_resolution(workspace, context.spec, context.datasets, context.media)
    return replace(context.plan_inputs, compile=compiled, datasets=datasets, media=media)
