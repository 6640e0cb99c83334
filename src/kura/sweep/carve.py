"""The validation split: Kura holds out a fixed share of each base dataset's items.

Items are ordered by the sha256 of their file name (stable across machines and runs) and the
first ``fraction`` of them (at least one) become ``<sweep>-<dataset>-val``; the rest
``<sweep>-<dataset>-train``. Both are ordinary workspace datasets linked to folders under
``sweeps/<id>/split/`` (files hard-linked where the file system allows, else copied), so the
lock records their digests and a trial trains on the training part only.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
from pathlib import Path

from kura.dataset.scan import IMAGE_EXTENSIONS, VIDEO_EXTENSIONS
from kura.errors import CheckFailed, Unsupported
from kura.sweep.records import Split
from kura.workspace import Workspace

__all__ = ["carve_split"]


def _items(media: Path) -> list[Path]:
    suffixes = {*IMAGE_EXTENSIONS, *VIDEO_EXTENSIONS}
    return sorted(p for p in media.iterdir() if p.is_file() and p.suffix.lower() in suffixes)


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def carve_split(
    workspace: Workspace, sweep_id: str, folder: Path, datasets: list[str], fraction: float
) -> Split:
    from kura.dataset.registry import add_dataset, load_dataset, media_dir, set_dataset_values

    split = Split(fraction=fraction)
    for name in datasets:
        spec, _ = load_dataset(workspace, name)
        if spec.control is not None:
            raise Unsupported(
                f"dataset {name} has control images; carving a validation split of paired "
                "data is not supported",
                hint="use objective.metric: train_loss for this sweep",
            )
        media = media_dir(workspace, spec)
        items = sorted(_items(media), key=lambda p: hashlib.sha256(p.name.encode()).hexdigest())
        count = max(1, math.ceil(len(items) * fraction))
        if len(items) - count < 1:
            raise CheckFailed(
                f"dataset {name} has {len(items)} item(s): too few to hold out "
                f"{fraction:.0%} for validation and still train",
                hint="add items, lower objective.validation_fraction, or use "
                "objective.metric: train_loss",
            )
        held, kept = items[:count], items[count:]
        names = {}
        for part, chosen in (("val", held), ("train", kept)):
            target = folder / "split" / f"{name}-{part}"
            for item in chosen:
                _place(item, target / item.name)
                caption = item.with_suffix(spec.caption_ext)
                if caption.is_file():
                    _place(caption, target / caption.name)
            dataset = f"{sweep_id}-{name}-{part}"
            resolution = spec.facts.resolution if spec.facts else [1024, 1024]
            add_dataset(
                workspace,
                dataset,
                target,
                link=True,
                caption_ext=spec.caption_ext,
                resolution=(int(resolution[0]), int(resolution[-1])),
            )
            intent = [
                f"intent.{key}={value}"
                for key, value in spec.intent.model_dump(mode="json").items()
                if value is not None
            ]
            if intent:
                set_dataset_values(workspace, dataset, intent)
            names[part] = dataset
        split.train[name] = names["train"]
        split.validation[name] = names["val"]
        split.held_out[name] = [p.name for p in held]
    return split
