"""What an agent reads from an inspection: blocking flags, which captions lack the trigger,
case variants of it, and exact duplicates named on the copy (issue 12, item 13)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from PIL import Image

from kura.dataset.inspect import inspect_dataset


def _folder(root: Path) -> Path:
    folder = root / "ds"
    folder.mkdir()
    captions = [
        "mochi, a cat on a sofa",
        "Mochi, a cat in the garden",
        "mochi, sleeping",
        "mochi, a cat at the window",
        "a cat eating",
    ]
    for index, caption in enumerate(captions):
        Image.new("RGB", (64 + index * 8, 64), (index * 40, 90, 200)).save(folder / f"{index}.png")
        (folder / f"{index}.txt").write_text(caption)
    return folder


def test_every_problem_says_whether_it_blocks(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (folder / "broken.txt").write_text("mochi, broken")
    report = inspect_dataset(folder).to_dict()
    assert report["problems"]
    assert all(isinstance(p["blocking"], bool) for p in report["problems"])
    assert any(p["blocking"] for p in report["problems"] if p["path"] == "broken.png")


def test_captions_without_the_trigger_are_listed_and_case_variants_reported(
    tmp_path: Path,
) -> None:
    trigger = inspect_dataset(_folder(tmp_path)).to_dict()["trigger"]
    assert trigger["word"] == "mochi"
    assert trigger["missing"] == ["4.txt"]
    assert trigger["case_variants"] == {"mochi": 3, "Mochi": 1}


def test_an_exact_duplicate_is_reported_on_the_copy_never_the_original(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    # "a (1).png" sorts first by name, and is newer: still the copy.
    shutil.copy(folder / "2.png", folder / "2 (1).png")
    shutil.copy(folder / "2.txt", folder / "2 (1).txt")
    older = os.stat(folder / "2.png").st_mtime - 100
    os.utime(folder / "2.png", (older, older))
    named = [p for p in inspect_dataset(folder).to_dict()["problems"] if p["code"] == "duplicate"]
    assert [(p["path"], p["message"]) for p in named] == [("2 (1).png", "same bytes as '2.png'")]


def test_without_a_copy_mark_the_older_file_is_the_original(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    shutil.copy(folder / "3.png", folder / "0a.png")  # sorts before "3.png", but newer
    shutil.copy(folder / "3.txt", folder / "0a.txt")
    older = os.stat(folder / "3.png").st_mtime - 100
    os.utime(folder / "3.png", (older, older))
    named = [p for p in inspect_dataset(folder).to_dict()["problems"] if p["code"] == "duplicate"]
    assert [p["path"] for p in named] == ["0a.png"]
