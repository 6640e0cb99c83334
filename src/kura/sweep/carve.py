"""The validation split: Kura holds out a fixed share of each base dataset's items.

An item is what the trainer reads as one training example: a target image or video as the
dataset scan sees it (:mod:`kura.dataset.scan`, Musubi's view of the folder), its caption
and, for paired data, every control image the pairing rule of :mod:`kura.dataset.pairs`
gives it (by stem, ``name.png`` or ``name_0.png``, ``name_1.png`` …). Files sharing a stem
(``a.png`` and ``a.mp4`` share ``a.txt``) are one unit, so nothing is ever in both parts.
Units are ordered by the sha256 of their first file name (stable across machines and runs)
and the first ``fraction`` of them (at least one) become ``<sweep>-<dataset>-val``; the rest
``<sweep>-<dataset>-train``.

Both parts are ordinary workspace datasets linked to folders under ``sweeps/<id>/split/``
(``<dataset>-<part>/`` for the media and captions, ``<dataset>-<part>.control/`` for the
controls; files hard-linked where the file system allows, else copied) with the base
dataset's caption extension, intent and inspection resolution, so their digests (controls
included) go into each trial's lock and a trial trains on the training part only. The
per-use settings of run.yaml (frames, frame extraction, control resolution …) are the base
run's, copied by :func:`kura.sweep.trials.trial_document`.

Paired data is carved only when its pairs are complete: a target without a control, a
control whose suffix the trainer refuses, or a control that pairs with no target is named
and refused (a split cannot tell which part such a file belongs to).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kura.dataset.scan import Entry
from kura.errors import CheckFailed, InvalidInput, Unsupported
from kura.sweep.records import Split
from kura.workspace import Workspace

__all__ = ["Unit", "carve_split", "dataset_units"]


@dataclass(frozen=True)
class Unit:
    """Files that go to one part together: targets of one stem, their caption, controls."""

    targets: tuple[Path, ...]
    caption: Path | None
    controls: tuple[Path, ...]

    @property
    def key(self) -> str:
        return hashlib.sha256(self.targets[0].name.encode()).hexdigest()


def dataset_units(
    media: Path, caption_ext: str, control: Path | None, *, dataset: str
) -> list[Unit]:
    """The dataset's items grouped into units (see the module docstring); CheckFailed
    naming the unpaired files when paired data does not pair completely."""
    from kura.dataset.pairs import pair_controls
    from kura.dataset.scan import scan_controls, scan_dataset

    scan = scan_dataset(media, caption_ext, skip=control)
    targets = [*scan.images, *scan.videos]
    controls_of: dict[str, list[Path]] = {}
    if control is not None:
        if scan.videos:
            raise Unsupported(
                f"dataset {dataset} has {len(scan.videos)} video(s) and a control folder; "
                "Kura's inspection pairs control images with target images only, so it cannot "
                "tell which controls go with which video",
                hint="use objective.metric: train_loss for this sweep (nothing is carved)",
            )
        controls = scan_controls(control)
        pairing = pair_controls(scan.images, controls.images)
        problems = [f"{t.rel} (no control image)" for t in pairing.missing]
        problems += [
            f"{rel} (control(s) {', '.join(c.name for c in bad)} do not end in _<number>)"
            for rel, bad in sorted(pairing.bad_suffix.items())
        ]
        problems += [f"control/{c.rel} (pairs with no target)" for c in pairing.orphans]
        problems += [f"control/{e.rel} ({why})" for e, why in controls.unsupported]
        if problems:
            raise CheckFailed(
                f"dataset {dataset}: {len(problems)} file(s) are not in complete pairs, so a "
                f"validation split cannot keep each pair together: {'; '.join(problems[:8])}"
                + (f"; and {len(problems) - 8} more" if len(problems) > 8 else ""),
                hint=f"pair them or move them out (`kura dataset validate {dataset}` lists "
                "each with its fix), or use objective.metric: train_loss",
            )
        controls_of = {
            rel: [Path(c.path) for c in found] for rel, found in pairing.controls.items()
        }
    by_stem: dict[str, list[Entry]] = {}
    for entry in targets:
        by_stem.setdefault(entry.stem, []).append(entry)
    units = []
    for stem, entries in by_stem.items():
        entries.sort(key=lambda e: e.name)
        caption = scan.captions.get(stem)
        controls_here = sorted(
            {p for e in entries for p in controls_of.get(e.rel, [])}, key=lambda p: p.name
        )
        units.append(
            Unit(
                tuple(Path(e.path) for e in entries),
                Path(caption.path) if caption is not None else None,
                tuple(controls_here),
            )
        )
    return sorted(units, key=lambda u: u.key)


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def carve_split(
    workspace: Workspace, sweep_id: str, folder: Path, datasets: list[str], fraction: float
) -> Split:
    from kura.dataset.registry import (
        add_dataset,
        control_dir,
        media_dir,
        read_dataset,
        set_dataset_values,
    )

    split = Split(fraction=fraction)
    for name in datasets:
        spec = read_dataset(workspace, name)
        control = control_dir(workspace, spec)
        units = dataset_units(media_dir(workspace, spec), spec.caption_ext, control, dataset=name)
        count = max(1, math.ceil(len(units) * fraction))
        if len(units) - count < 1:
            raise CheckFailed(
                f"dataset {name} has {len(units)} item(s): too few to hold out "
                f"{fraction:.0%} for validation and still train",
                hint="add items, lower objective.validation_fraction, or use "
                "objective.metric: train_loss",
            )
        held, kept = units[:count], units[count:]
        names = {}
        for part, chosen in (("val", held), ("train", kept)):
            target = folder / "split" / f"{name}-{part}"
            target.mkdir(parents=True, exist_ok=True)
            controls = folder / "split" / f"{name}-{part}.control" if control else None
            for unit in chosen:
                for path in (*unit.targets, *([unit.caption] if unit.caption else [])):
                    _place(path, target / path.name)
                for path in unit.controls:
                    assert controls is not None
                    _place(path, controls / path.name)
            if controls is not None:
                controls.mkdir(parents=True, exist_ok=True)
            dataset = f"{sweep_id}-{name}-{part}"
            resolution = spec.facts.resolution if spec.facts else [1024, 1024]
            added = add_dataset(
                workspace,
                dataset,
                target,
                link=True,
                caption_ext=spec.caption_ext,
                control=controls,
                resolution=(int(resolution[0]), int(resolution[-1])),
            )
            if control is not None:
                _check_pairs(added.inspection, dataset, chosen)
            intent = [
                f"intent.{key}={json.dumps(value)}"
                for key, value in spec.intent.model_dump(mode="json").items()
                if value is not None
            ]
            if intent:
                set_dataset_values(workspace, dataset, intent)
            names[part] = dataset
        split.train[name] = names["train"]
        split.validation[name] = names["val"]
        split.held_out[name] = [p.name for unit in held for p in unit.targets]
        if control is not None:
            split.held_out_controls[name] = [p.name for unit in held for p in unit.controls]
    return split


def _check_pairs(inspection: dict[str, Any], dataset: str, units: list[Unit]) -> None:
    """The carved part pairs exactly as its units say (the inspection's own pairing)."""
    pairs = inspection.get("pairs") or {}
    expected = sum(len(u.targets) for u in units)
    if pairs.get("with_controls") != expected or pairs.get("missing") or pairs.get("orphans"):
        raise InvalidInput(
            f"the carved dataset {dataset} does not pair as its base dataset did "
            f"({pairs.get('with_controls')} of {expected} targets with controls, missing "
            f"{pairs.get('missing')}, orphans {pairs.get('orphans')})",
            hint="report this as a Kura bug; the base dataset is unchanged",
        )
