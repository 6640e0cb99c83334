"""AI-Toolkit's aspect buckets and batches per epoch, as its data loader makes them.

Restated from ostris/ai-toolkit 27a03a9 (checked by ``tests/backends/aitoolkit/
test_aitk_buckets_trainer.py`` against its own ``AiToolkitDataset``):

- A dataset whose ``resolution`` is a list becomes one dataset per resolution
  (``toolkit/config_modules.py:1095`` ``preprocess_dataset_raw_config``), each with its
  own buckets and batches; the data loader walks their concatenation
  (``toolkit/data_loader.py:718``).
- ``num_repeats`` repeats the file list (``toolkit/data_loader.py:451``).
- The bucket step is the model's, not the config's: ``AiToolkitDataset.__init__`` overwrites
  ``bucket_tolerance`` with ``sd.get_bucket_divisibility()`` (``toolkit/data_loader.py:395``);
  :data:`DIVISIBILITY` lists each class's value.
- Each image's bucket is ``toolkit/buckets.py:17`` ``get_bucket_for_image_size``: the
  pixel count is capped at ``resolution²`` but never raised (no upscaling: a small image
  keeps its area), both sides scaled by ``sqrt(target / pixels)``, then of the four
  floor/ceil roundings to the step whose area stays within ``resolution²`` the one nearest
  the target area wins (the first on a tie); a fallback floors both sides (at least one
  step) when none fits. The image is scaled to cover it and centre-cropped
  (``toolkit/dataloader_mixins.py:261-293``).
- Buckets keep first-seen order; each is cut into batches of the micro-batch and a short
  last batch is padded with repeats of its own items (``toolkit/dataloader_mixins.py:198``
  ``build_batch_indices``), so a bucket of ``n`` items makes ``ceil(n / batch)`` batches.
  The epoch is the data loader's length, the sum over every bucket of every dataset
  (``toolkit/data_loader.py:628`` ``__len__`` = ``len(batch_indices)``; ``batch_size=None``
  at ``:748``).
- A training step draws ``gradient_accumulation`` batches (``jobs/process/
  BaseSDTrainProcess.py:2565``), restarting the loader at an epoch's end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from kura.backends.base import (
    CompileInputs,
    DatasetBuckets,
    DatasetInput,
    PlanInputs,
    TrainerBucket,
)
from kura.errors import InvalidInput, SpecError, Unsupported
from kura.schema.run import DatasetUse, RunSpec

__all__ = [
    "DIVISIBILITY",
    "AitkBuckets",
    "aitk_dataset_buckets",
    "batches_countable",
    "bucket_for_image",
    "bucket_resolution",
    "buckets_report",
    "dataset_buckets",
    "divisibility_for",
    "input_buckets",
    "run_buckets",
    "steps_per_epoch",
]

_EXT = "extensions_built_in/diffusion_models/"

DIVISIBILITY: Mapping[str, tuple[int, str]] = MappingProxyType(
    {
        "flux_kontext": (16, _EXT + "flux_kontext/flux_kontext.py:70"),
        "flux2": (16, _EXT + "flux2/flux2_model.py:88"),
        "flux2_klein_4b": (16, _EXT + "flux2/flux2_model.py:88 (Flux2KleinModel inherits it)"),
        "flux2_klein_9b": (16, _EXT + "flux2/flux2_model.py:88 (Flux2KleinModel inherits it)"),
        "qwen_image": (32, _EXT + "qwen_image/qwen_image.py:84"),
        "qwen_image_edit": (32, _EXT + "qwen_image/qwen_image.py:84 (inherited)"),
        "qwen_image_edit_plus": (32, _EXT + "qwen_image/qwen_image.py:84 (inherited)"),
        "zimage": (16, _EXT + "z_image/z_image.py:81"),
        "wan21": (16, "toolkit/models/wan21/wan21.py:335"),
        "wan21_i2v": (16, "toolkit/models/wan21/wan21.py:335 (inherited)"),
        "wan22_14b": (16, _EXT + "wan22/wan22_14b_model.py:248"),
        "wan22_14b_i2v": (16, _EXT + "wan22/wan22_14b_model.py:248 (inherited)"),
        "wan22_5b": (32, _EXT + "wan22/wan22_5b_model.py:117"),
        "hidream_o1": (32, _EXT + "hidream/hidream_o1_model.py:152"),
        "ideogram4": (16, _EXT + "ideogram4/ideogram4.py:207 (VAE 8 x patch 2, :181-182)"),
        "krea2": (16, _EXT + "krea2/krea2.py:226 (VAE 8 x patch 2, :185-186, :72)"),
        "chroma": (32, _EXT + "chroma/chroma_model.py:94"),
        "sdxl": (
            16,
            "toolkit/stable_diffusion_model.py:289 (2 ** (4 VAE blocks - 1), doubled at :297)",
        ),
    }
)
"""``model.arch`` → (``get_bucket_divisibility()``, where its class says so)."""


@dataclass(frozen=True)
class AitkBuckets:
    """One dataset at one resolution, as AI-Toolkit buckets and batches it."""

    resolution: int
    divisibility: int
    batch_size: int
    buckets: tuple[TrainerBucket, ...]
    sized: bool = True
    """False where Kura read no item sizes (videos at a micro-batch of 1): one row holds
    every item, each its own batch, and its size is the run's resolution, not a bucket."""

    @property
    def batches(self) -> int:
        return sum(b.batches for b in self.buckets)

    @property
    def items(self) -> int:
        return sum(b.items for b in self.buckets)


def divisibility_for(arch: str) -> int:
    """The bucket step AI-Toolkit's class for ``arch`` uses."""
    found = DIVISIBILITY.get(arch)
    if found is None:
        raise InvalidInput(
            f"Kura does not know AI-Toolkit's bucket step for model.arch {arch!r}",
            hint="known: " + ", ".join(sorted(DIVISIBILITY)),
        )
    return found[0]


def bucket_for_image(
    width: int, height: int, resolution: int, divisibility: int
) -> tuple[int, int]:
    """``get_bucket_for_image_size`` (``toolkit/buckets.py:17``): the (width, height) an
    image of this size trains at."""
    total = width * height
    most = resolution * resolution
    target = min(total, most)
    scaler = (target / total) ** 0.5
    w_raw = (width * scaler) / divisibility
    h_raw = (height * scaler) / divisibility
    floor_w, ceil_w = math.floor(w_raw) * divisibility, math.ceil(w_raw) * divisibility
    floor_h, ceil_h = math.floor(h_raw) * divisibility, math.ceil(h_raw) * divisibility
    candidates = [(floor_w, floor_h), (floor_w, ceil_h), (ceil_w, floor_h), (ceil_w, ceil_h)]
    capped = [(w, h) for w, h in candidates if w > 0 and h > 0 and w * h <= most]
    if not capped:
        capped = [(max(divisibility, floor_w), max(divisibility, floor_h))]
    return min(capped, key=lambda wh: abs(wh[0] * wh[1] - target))


def dataset_buckets(
    sizes: Sequence[tuple[int, int, int]],
    resolutions: Sequence[int],
    *,
    divisibility: int,
    batch_size: int,
    repeats: int = 1,
) -> tuple[AitkBuckets, ...]:
    """The buckets of one dataset, one :class:`AitkBuckets` per resolution, from its
    images' ``(width, height, count)``. Buckets are listed in the order of ``sizes`` (AI-
    Toolkit's order is the folder walk's; only the counts matter for an epoch)."""
    if batch_size < 1 or repeats < 1 or divisibility < 1:
        raise InvalidInput(
            f"batch_size {batch_size}, repeats {repeats} and divisibility {divisibility} "
            "must be at least 1"
        )
    out: list[AitkBuckets] = []
    for resolution in resolutions:
        counts: dict[tuple[int, int], int] = {}
        for width, height, count in sizes:
            bucket = bucket_for_image(width, height, resolution, divisibility)
            counts[bucket] = counts.get(bucket, 0) + count * repeats
        out.append(
            AitkBuckets(
                resolution=resolution,
                divisibility=divisibility,
                batch_size=batch_size,
                buckets=tuple(
                    TrainerBucket(w, h, n, math.ceil(n / batch_size))
                    for (w, h), n in counts.items()
                ),
            )
        )
    return tuple(out)


def steps_per_epoch(batches: int, accumulation: int) -> int:
    """Training steps one epoch of ``batches`` makes when each step draws ``accumulation``
    batches (at least one; a partial step finishes on the next epoch's first batches)."""
    return max(1, math.ceil(batches / accumulation))


def sizes_read(source: DatasetInput) -> bool:
    """Whether inspection read the size of every item (an image dataset)."""
    sized = sum(count for _, _, count in source.image_sizes)
    return source.kind == "image" and source.clips == () and sized == source.items


def batches_countable(source: DatasetInput, batch_size: int) -> bool:
    """Whether :func:`input_buckets` can count this dataset's batches."""
    return source.items is not None and (batch_size == 1 or sizes_read(source))


def input_buckets(
    source: DatasetInput, resolution: int, *, arch: str, batch_size: int, repeats: int
) -> AitkBuckets:
    """A run dataset's buckets at its resolution, from the image sizes inspection read.

    With a micro-batch of 1 every item is its own batch whatever its bucket, so a dataset
    whose sizes are unknown (videos, whose buckets also split by frame count,
    ``toolkit/dataloader_mixins.py:300``) is counted as one bucket of the run's resolution;
    a larger micro-batch needs the sizes and is refused without them."""
    if source.items is None:
        raise SpecError(
            f"dataset {source.name}: Kura does not know how many items it holds",
            hint=f"run `kura dataset inspect {source.name}`, or set training.max_steps",
        )
    divisibility = divisibility_for(arch)
    sized = sum(count for _, _, count in source.image_sizes)
    if sizes_read(source):
        return dataset_buckets(
            source.image_sizes,
            (resolution,),
            divisibility=divisibility,
            batch_size=batch_size,
            repeats=repeats,
        )[0]
    if batch_size == 1:
        items = source.items * repeats
        return AitkBuckets(
            resolution,
            divisibility,
            1,
            (TrainerBucket(resolution, resolution, items, items),),
            sized=False,
        )
    what = "holds videos" if source.kind == "video" or source.clips else "has unread sizes"
    raise Unsupported(
        f"dataset {source.name} {what}: AI-Toolkit batches {batch_size} items of one bucket "
        f"at a time (padding a short bucket), and Kura knows the size of {sized} of its "
        f"{source.items} items, so it cannot count the batches of an epoch",
        hint=f"re-inspect it (`kura dataset inspect {source.name}`), set "
        "backend.config.batch_size: 1 (gradient accumulation makes the effective batch), or "
        "set training.max_steps",
    )


def bucket_resolution(use: DatasetUse) -> int:
    """The one square side AI-Toolkit buckets a dataset around (a non-square resolution is
    refused: it has no such setting)."""
    sides = use.resolution
    if len(sides) == 2 and sides[0] != sides[1]:
        raise Unsupported(
            f"dataset {use.name}: resolution {sides} — AI-Toolkit buckets every aspect around "
            "one square side",
            hint=f"set datasets[].resolution to [{max(sides)}] (or the side you want)",
        )
    return sides[0]


def run_buckets(spec: RunSpec, datasets: Sequence[DatasetInput]) -> tuple[AitkBuckets, ...]:
    """Each run dataset's buckets as the compiled job makes them (its resolution, the run's
    micro-batch, the model class's step)."""
    from kura.backends.aitoolkit.archs import model_for
    from kura.backends.aitoolkit.knobs import read_knobs

    model = model_for(spec.model.base)
    if model is None:
        raise SpecError(
            f"bundle {spec.model.base} is not one AI-Toolkit trains",
            hint="set model.base to an aitk-… bundle (`kura model list`)",
        )
    micro = read_knobs(spec.backend.config).batch_size
    return tuple(
        input_buckets(
            source, bucket_resolution(use), arch=model.arch, batch_size=micro, repeats=use.repeats
        )
        for use, source in zip(spec.datasets, datasets, strict=True)
    )


def buckets_report(spec: RunSpec, inputs: CompileInputs | None) -> dict[str, object]:
    """plan.md's section on AI-Toolkit's buckets: per dataset its buckets, their items and
    batches, and the steps an epoch makes (``trainer_report`` = {title, lines})."""
    title = "AI-Toolkit buckets"
    if inputs is None:
        return {"title": title, "lines": ["not known before the run's inputs resolve"]}
    unknown = [s.name for s in inputs.datasets if s.items is None]
    if unknown:
        return {"title": title, "lines": [f"not inspected: {', '.join(unknown)}"]}
    parts = run_buckets(spec, inputs.datasets)
    lines: list[str] = []
    for use, part in zip(spec.datasets, parts, strict=True):
        if not part.sized:
            lines.append(
                f"{use.name} at {part.resolution} px: {part.items} items whose sizes Kura did "
                "not read (clips), one batch each at a micro-batch of 1"
            )
            continue
        shown = ", ".join(
            f"{b.width}x{b.height} × {b.items} → {b.batches}" for b in part.buckets[:12]
        ) + (f" (+{len(part.buckets) - 12} more)" if len(part.buckets) > 12 else "")
        lines.append(
            f"{use.name} at {part.resolution} px, {part.divisibility}-pixel step, batches of "
            f"{part.batch_size}: {shown}; {part.batches} batches (a short bucket is padded "
            "with its own items)"
        )
    batches = sum(part.batches for part in parts)
    micro = parts[0].batch_size if parts else 1
    accumulation = max(1, spec.training.effective_batch // micro)
    lines.append(
        f"one epoch: {batches} batches, {accumulation} per step → "
        f"{steps_per_epoch(batches, accumulation)} steps"
    )
    return {"title": title, "lines": lines}


RULE = (
    "AI-Toolkit 27a03a9 toolkit/buckets.py:17 get_bucket_for_image_size (area capped at "
    "resolution², nearest of four roundings to the model's step), batches per bucket padded "
    "with its own items (toolkit/dataloader_mixins.py:199)"
)


UNSIZED = (
    "the items' sizes were not read (clips): one row for all of them, each its own batch at "
    "a micro-batch of 1; AI-Toolkit buckets them by size and frame count "
    "(toolkit/dataloader_mixins.py:300)"
)


def aitk_dataset_buckets(spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
    """``Backend.dataset_buckets`` for AI-Toolkit: :func:`run_buckets` of the run's
    resolved datasets."""
    if inputs.compile is None:
        raise SpecError(
            "AI-Toolkit's buckets need the run's resolved datasets",
            hint="pass the run's plan inputs (`kura dataset inspect NAME --run RUN`)",
        )
    parts = run_buckets(spec, inputs.compile.datasets)
    return tuple(
        DatasetBuckets(
            dataset=use.name,
            resolution=(part.resolution, part.resolution),
            step=part.divisibility,
            batch_size=part.batch_size,
            buckets=part.buckets,
            rule=RULE if part.sized else UNSIZED,
        )
        for use, part in zip(spec.datasets, parts, strict=True)
    )
