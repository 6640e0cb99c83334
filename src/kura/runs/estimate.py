"""`kura run estimate`: the estimator on the run exactly as written."""

from __future__ import annotations

from typing import Any

from kura.runs.accommodations import estimate_config
from kura.runs.store import load_run
from kura.workspace import Workspace

__all__ = ["estimate_run"]


def estimate_run(workspace: Workspace, run_id: str, *, gpu: str | None = None) -> dict[str, Any]:
    """A ``run-estimate`` document; the fit verdict needs a GPU (``--gpu``, run.yaml, local)."""
    from kura.errors import UsageError
    from kura.backends.musubi.estimator.estimate import estimate
    from kura.runs.gpu_choice import choose_gpu

    spec, _ = load_run(workspace, run_id)
    try:
        gpu_class, _ = choose_gpu(gpu, spec.execution.gpu_class)
    except UsageError:
        gpu_class = None
    document = estimate(estimate_config(workspace, spec), gpu_class).to_dict()
    document["run"] = run_id
    return document
