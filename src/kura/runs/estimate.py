"""`kura run estimate`: the estimator on the run exactly as written."""

from __future__ import annotations

from typing import Any

from kura.runs.context import load_context
from kura.workspace import Workspace

__all__ = ["estimate_run"]


def estimate_run(workspace: Workspace, run_id: str, *, gpu: str | None = None) -> dict[str, Any]:
    """A ``run-estimate`` document; the fit verdict needs a GPU (``--gpu``, run.yaml, local)."""
    from kura.errors import UsageError
    from kura.runs.gpu_choice import choose_gpu
    from kura.runs.plan import estimate_document, plan_inputs

    context = load_context(workspace, run_id)
    try:
        gpu_class, _ = choose_gpu(gpu, context.spec.execution.gpu_class)
    except UsageError:
        gpu_class = None
    written = context.backend.estimate(context.spec, plan_inputs(workspace, context), gpu_class)
    document = estimate_document(written)
    document.setdefault("kind", "run-estimate")  # a backend's own document may carry none
    document["run"] = run_id
    return document
