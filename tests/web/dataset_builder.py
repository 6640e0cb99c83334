"""A paired-edit dataset for the dataset page: targets with captions, one without, controls
beside them (``<stem>.png`` and ``<stem>_0.png``), and an orphan caption."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from kura.dataset.registry import add_dataset
from kura.workspace import Workspace

EDIT_CAPTION = "turn the red square blue"


def write_edit_folders(root: Path, extra_targets: int = 0) -> tuple[Path, Path]:
    """(targets, controls): ``fox.png`` captioned, ``uncaptioned.png`` without a caption
    (Musubi drops it: missing-caption), ``orphan.txt`` with no image, and ``x_NNN.png``
    captioned targets to fill pages; every target has a control."""
    targets, controls = root / "targets", root / "controls"
    targets.mkdir(parents=True)
    controls.mkdir(parents=True)
    Image.new("RGB", (96, 64), (30, 60, 200)).save(targets / "fox.png")
    (targets / "fox.txt").write_text(EDIT_CAPTION + "\n")
    Image.new("RGB", (96, 64), (200, 60, 30)).save(controls / "fox.png")
    Image.new("RGB", (64, 96), (90, 160, 90)).save(targets / "uncaptioned.png")
    Image.new("RGB", (64, 96), (160, 90, 90)).save(controls / "uncaptioned_0.png")
    (targets / "orphan.txt").write_text("a caption without its picture\n")
    for index in range(extra_targets):
        colour = (index * 5 % 256, 40, 255 - index * 3 % 256)
        Image.new("RGB", (32 + index, 32), colour).save(targets / f"x_{index:03d}.png")
        (targets / f"x_{index:03d}.txt").write_text(f"extra picture {index}\n")
        Image.new("RGB", (32 + index, 32), colour[::-1]).save(controls / f"x_{index:03d}.png")
    return targets, controls


def add_edit_dataset(
    workspace: Workspace, root: Path, name: str = "edits", *, extra: int = 0, link: bool = False
) -> str:
    targets, controls = write_edit_folders(root, extra)
    add_dataset(workspace, name, targets, control=controls, link=link, resolution=(256, 256))
    return name
