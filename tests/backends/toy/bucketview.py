"""``Backend.dataset_buckets`` for the toy trainer: it trains every item at the run's
resolution (one bucket per dataset), in batches of ``backend.config.batch``."""

from __future__ import annotations

import math

from kura.backends.base import DatasetBuckets, PlanInputs, TrainerBucket
from kura.schema.run import RunSpec


def toy_dataset_buckets(spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
    batch = int(spec.backend.config.get("batch", 2))
    out = []
    for use in spec.datasets:
        facts = inputs.datasets[use.name].facts
        counts = facts.counts if facts else {}
        items = (counts.get("images", 0) + counts.get("videos", 0)) * use.repeats
        width, height = (list(use.resolution) * 2)[:2]
        bucket = TrainerBucket(width, height, items, math.ceil(items / batch))
        out.append(
            DatasetBuckets(use.name, (width, height), 1, batch, (bucket,), "the toy trainer")
        )
    return tuple(out)
