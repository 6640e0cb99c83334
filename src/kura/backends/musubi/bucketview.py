"""``Backend.dataset_buckets`` for Musubi: each run dataset's buckets as its dataset code
makes them (:func:`kura.backends.musubi.estimation.dataset_items`: ``dataset/bucket.py``
``BucketSelector`` at the run's resolution and the architecture's step), cut into batches of
``backend.config.batch_size`` per bucket (a batch never mixes buckets)."""

from __future__ import annotations

import math

from kura.backends.base import DatasetBuckets, PlanInputs, TrainerBucket
from kura.schema.run import RunSpec

__all__ = ["musubi_dataset_buckets"]

RULE = (
    "musubi-tuner 0.3.4 src/musubi_tuner/dataset/bucket.py BucketSelector (nearest aspect at "
    "the resolution's area), batches per bucket"
)


def musubi_dataset_buckets(spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
    from kura.backends.musubi.adapters import adapter_for
    from kura.backends.musubi.estimation import dataset_items

    architecture = inputs.bundle.architecture
    adapter = adapter_for(architecture)
    step = adapter.resolution_multiple if adapter else 16
    micro = int(spec.backend.config.get("batch_size", 1))
    out: list[DatasetBuckets] = []
    for use in spec.datasets:
        dataset = inputs.datasets.get(use.name)
        items = dataset_items(
            use, dataset.facts if dataset else None, inputs.media.get(use.name), architecture
        )
        width, height = (list(use.resolution) * 2)[:2]
        buckets = tuple(
            TrainerBucket(b.width, b.height, b.count, math.ceil(b.count / micro), b.frames)
            for b in (*items.videos, *items.images)
        )
        out.append(DatasetBuckets(use.name, (width, height), step, micro, buckets, RULE))
    return tuple(out)
