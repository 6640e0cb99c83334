"""Image integrity, colour modes, EXIF rotation and duplicate detection."""

from __future__ import annotations

import os

import numpy as np
from dataset_builders import encode, picture
from PIL import Image

from kura.dataset import BLOCKING_CODES, inspect_dataset
from kura.dataset.images import read_image_facts, read_pixel_facts


def codes_by_path(result) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for problem in result.problems:
        found.setdefault(problem.path, set()).add(problem.code)
    return found


def test_truncated_empty_and_fake_files_are_broken(build) -> None:
    jpeg = encode(picture(400, 300, seed=1), "JPEG", quality=95)
    png = encode(picture(400, 300, seed=2), "PNG")
    build.raw("cut.jpg", jpeg[: len(jpeg) // 2])
    build.raw("cut.png", png[: len(png) // 2])
    build.raw("zero.png", b"")
    build.raw("text.png", b"this is a text file, not a picture\n")
    build.image("good.png", seed=3)
    result = inspect_dataset(build.root)
    assert codes_by_path(result) == {
        "cut.jpg": {"broken-media"},
        "cut.png": {"broken-media"},
        "zero.png": {"empty-file"},
        "text.png": {"broken-media"},
    }
    assert len(result.blocking_problems()) == 4
    assert result.to_dict()["sizes"]["count"] == 1


def test_a_file_pillow_cannot_identify_gives_the_same_message_on_every_read(build) -> None:
    """Pillow names the open handle in this message, and with it the file descriptor, which
    differs from one read to the next (here: three more descriptors open for the second)."""
    path = build.raw("text.png", b"this is a text file, not a picture\n")
    first = read_image_facts(path)
    spare = [os.open(os.devnull, os.O_RDONLY) for _ in range(3)]
    try:
        second = read_image_facts(path)
        pixels = read_pixel_facts(path)
    finally:
        for descriptor in spare:
            os.close(descriptor)
    assert first["error"] == second["error"] == pixels["error"]
    assert first["error"] == "UnidentifiedImageError: cannot identify image file"


def test_folder_of_only_empty_files(build) -> None:
    for i in range(3):
        build.raw(f"z{i}.jpg", b"")
    result = inspect_dataset(build.root).to_dict()
    assert [p["code"] for p in result["problems"]] == ["empty-file"] * 3
    assert result["buckets"] == []
    assert result["duplicates"] == []
    assert result["sizes"]["count"] == 0


def test_color_modes(build) -> None:
    build.image("cmyk.jpg", image=picture(64, 64, seed=1).convert("CMYK"))
    sixteen = Image.fromarray((np.arange(64 * 64).reshape(64, 64) * 16).astype(np.uint16))
    build.image("deep.png", image=sixteen)
    palette = picture(64, 64, seed=2).convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    build.image("pal.png", image=palette, transparency=0)
    rgba = picture(64, 64, seed=3).convert("RGBA")
    rgba.putalpha(Image.new("L", (64, 64), 0).point(lambda _: 0))
    build.image("clear.png", image=rgba)
    build.image("opaque.png", image=picture(64, 64, seed=4).convert("RGBA"))
    build.image("gray.png", image=picture(64, 64, seed=5).convert("L"))
    result = inspect_dataset(build.root)
    found = codes_by_path(result)
    assert found == {
        "cmyk.jpg": {"color-mode"},
        "deep.png": {"color-mode"},
        "pal.png": {"color-mode"},
        "clear.png": {"color-mode"},
    }
    messages = {p.path: p.message for p in result.problems}
    assert "CMYK" in messages["cmyk.jpg"]
    assert "white" in messages["deep.png"]
    assert "alpha" in messages["clear.png"]


def test_exif_orientation_six(build) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6
    build.image("phone.jpg", (80, 60), seed=7, exif=exif.tobytes())
    (problem,) = inspect_dataset(build.root).problems
    assert problem.code == "exif-rotation"
    assert "exif_transpose" in problem.message
    assert "side" in problem.message
    assert problem.code in BLOCKING_CODES


def test_exact_and_near_duplicates(build) -> None:
    original = picture(512, 384, seed=11)
    build.image("orig.png", image=original)
    build.raw("copy.png", (build.root / "orig.png").read_bytes())
    build.image("smaller.jpg", image=original.resize((256, 192)), quality=80)
    build.image("other.png", image=picture(512, 384, seed=12))
    result = inspect_dataset(build.root)
    data = result.to_dict()
    assert data["duplicates"] == [["copy.png", "orig.png"]]
    assert data["near_duplicates"] == [["copy.png", "smaller.jpg"], ["orig.png", "smaller.jpg"]]
    assert {p["kind"] for p in data["near_duplicate_pairs"]} == {"resized"}
    found = codes_by_path(result)
    # the exact copy is flagged on the file named as a copy, never on the original
    assert found["copy.png"] == {"duplicate"}
    assert "orig.png" not in found
    assert found["smaller.jpg"] == {"near-duplicate"}
    (near,) = [p for p in result.problems if p.code == "near-duplicate"]
    assert near.message.startswith("looks like a resized copy of 'copy.png'")
    assert "other.png" not in found
    assert not result.blocking_problems()


def test_distinct_pictures_are_not_near_duplicates(build) -> None:
    for seed in range(12):
        build.image(f"p{seed}.png", (96, 96), seed=seed)
    assert inspect_dataset(build.root).to_dict()["near_duplicates"] == []
