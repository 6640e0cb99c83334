"""``kura dataset inspect NAME --run RUN``: the dataset's buckets as the run's trainer makes
them (its resolution, bucket step and micro-batch), through ``Backend.dataset_buckets``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kura.errors import UsageError

if TYPE_CHECKING:
    from kura.backends.base import DatasetBuckets
    from kura.workspace import Workspace

__all__ = ["RunBuckets", "run_dataset_buckets"]


@dataclass(frozen=True)
class RunBuckets:
    """One dataset's buckets in one run, and the trainer that makes them."""

    run: str
    backend: str
    title: str
    buckets: DatasetBuckets

    def to_dict(self) -> dict[str, object]:
        return {
            "run": self.run,
            "backend": self.backend,
            "trainer": self.title,
            **self.buckets.to_dict(),
        }


def run_dataset_buckets(workspace: Workspace, run_id: str, dataset: str) -> RunBuckets:
    """Dataset ``dataset`` of run ``run_id``, bucketed by the run's trainer."""
    from kura.runs.context import load_context
    from kura.runs.inputs import plan_inputs

    context = load_context(workspace, run_id)
    names = [use.name for use in context.spec.datasets]
    if dataset not in names:
        raise UsageError(
            f"run {run_id} does not train dataset {dataset}",
            hint=f"its datasets: {', '.join(names)}",
        )
    found = context.backend.dataset_buckets(context.spec, plan_inputs(workspace, context))
    chosen = next(b for b in found if b.dataset == dataset)
    return RunBuckets(run_id, context.backend.name, context.backend.title, chosen)
