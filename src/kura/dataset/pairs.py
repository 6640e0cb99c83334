"""Pair target images with control images the way Musubi's directory loader does.

Rule (``src/musubi_tuner/dataset/datasources.py``, ``ImageDirectoryDatasource.__init__``):
targets are taken longest file name first; each claims every unclaimed control whose file
name starts with ``<target stem>.`` or ``<target stem>_``. Controls are ordered with the
same-stem one first, then by the number after the last ``_`` (``name_0``, ``name_1`` or
``name_0000``); a claimed control whose suffix is not a number stops Musubi with
"Invalid digits suffix". Musubi refuses the dataset when any target has no control.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kura.dataset.scan import Entry

__all__ = ["Pairing", "pair_controls"]


@dataclass(slots=True)
class Pairing:
    """Controls per target (relative control paths), and what did not pair."""

    controls: dict[str, list[Entry]] = field(default_factory=dict)
    missing: list[Entry] = field(default_factory=list)
    bad_suffix: dict[str, list[Entry]] = field(default_factory=dict)
    orphans: list[Entry] = field(default_factory=list)


def pair_controls(targets: list[Entry], controls: list[Entry]) -> Pairing:
    """Match ``controls`` to ``targets`` by name; see the module docstring for the rule."""
    pairing = Pairing()
    unclaimed = {c.name: c for c in controls}
    for target in sorted(targets, key=lambda t: len(t.name), reverse=True):
        prefixes = (target.stem + ".", target.stem + "_")
        claimed = [c for name, c in unclaimed.items() if name.startswith(prefixes)]
        for control in claimed:
            del unclaimed[control.name]
        if not claimed:
            pairing.missing.append(target)
            continue
        bad = [c for c in claimed if _suffix_number(c, target) is None]
        if bad:
            pairing.bad_suffix[target.rel] = bad
            continue
        claimed.sort(key=lambda c: _suffix_number(c, target) or 0)
        pairing.controls[target.rel] = claimed
    pairing.missing.sort(key=lambda e: e.rel)
    pairing.orphans = sorted(unclaimed.values(), key=lambda e: e.rel)
    return pairing


def _suffix_number(control: Entry, target: Entry) -> int | None:
    """Sort position of a control: 0 for the same stem, 1 + its numeric suffix otherwise."""
    if control.stem == target.stem:
        return 0
    suffix = control.stem.rsplit("_", 1)[-1]
    return int(suffix) + 1 if suffix.isdigit() and suffix.isascii() else None
