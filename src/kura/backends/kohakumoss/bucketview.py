"""``Backend.dataset_buckets`` for KohakuMoss: refused. KohakuMoss packs items into
token-budget batches in its own data code rather than fixed micro-batches per aspect
bucket, and Kura does not reproduce that packing, so it shows no buckets it cannot stand
behind."""

from __future__ import annotations

from kura.backends.base import DatasetBuckets, PlanInputs
from kura.errors import Unsupported
from kura.schema.run import RunSpec

__all__ = ["moss_dataset_buckets"]


def moss_dataset_buckets(spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
    raise Unsupported(
        f"run {spec.id} trains with KohakuMoss, which batches by token budget in its own data "
        "code: Kura does not predict its buckets",
        hint="inspect without --run for the aspect preview; KohakuMoss's log lists the "
        "batches it makes",
    )
