"""Generated data for `kura demo`: Pillow-drawn images, captions with a trigger word, one
paired-edit set, and a few deliberate problems for the checks to find."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kura.fsutil import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = ["DemoData", "write_demo_data", "write_tiny_set"]

TRIGGER = "myaku"
_SCENES = ("in a garden", "on a rooftop at dusk", "by the sea", "in a library", "in the snow")
_POSES = ("standing", "sitting", "waving", "looking back", "smiling")
_SIZES = ((1024, 1024), (832, 1216), (1216, 832), (768, 768), (1344, 768))


@dataclass(frozen=True)
class DemoData:
    character: Path
    edits: Path
    edit_controls: Path
    deliberate_problems: list[str]


def write_demo_data(root: Path, *, count: int = 24, seed: int = 7) -> DemoData:
    """Write a character set with captions, a paired-edit set, and known problems."""
    rng = random.Random(seed)
    character = root / "character"
    for index in range(count):
        width, height = _SIZES[index % len(_SIZES)]
        image = _draw_character(width, height, rng)
        stem = f"myaku_{index:03d}"
        _save(image, character / f"{stem}.{'jpg' if index % 3 else 'png'}")
        caption = f"{TRIGGER}, a small fox spirit {rng.choice(_POSES)} {rng.choice(_SCENES)}"
        atomic_write_text(character / f"{stem}.txt", caption + "\n")
    problems = _add_problems(character, rng)
    edits, controls = root / "edits", root / "edits_control"
    for index in range(6):
        before = _draw_character(768, 768, rng)
        stem = f"pair_{index:02d}"
        _save(before, controls / f"{stem}.png")
        _save(before.convert("L").convert("RGB"), edits / f"{stem}.png")
        atomic_write_text(edits / f"{stem}.txt", "turn the picture into black and white\n")
    return DemoData(character, edits, controls, problems)


def _add_problems(folder: Path, rng: random.Random) -> list[str]:
    import io

    # 1. a JPEG cut off half-way, as a failed copy leaves it
    image = _draw_character(1024, 1024, rng)
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    data = buffer.getvalue()
    atomic_write_bytes(folder / "myaku_cut.jpg", data[: len(data) // 2])
    atomic_write_text(folder / "myaku_cut.txt", f"{TRIGGER}, a small fox spirit, cut off\n")
    # 2. an image with no caption
    _save(_draw_character(1024, 1024, rng), folder / "myaku_nocaption.png")
    # 3. a caption saved as Latin-1 by an old editor
    _save(_draw_character(1024, 1024, rng), folder / "myaku_latin1.png")
    atomic_write_bytes(
        folder / "myaku_latin1.txt", f"{TRIGGER}, café au lait fur\n".encode("latin-1")
    )
    # 4. an exact duplicate under another name
    (folder / "myaku_copy.png").write_bytes((folder / "myaku_000.png").read_bytes())
    atomic_write_text(folder / "myaku_copy.txt", (folder / "myaku_000.txt").read_text())
    return [
        "myaku_cut.jpg: truncated JPEG",
        "myaku_nocaption.png: no caption",
        "myaku_latin1.txt: Latin-1 caption",
        "myaku_copy.png: exact duplicate of myaku_000.png",
    ]


def _draw_character(width: int, height: int, rng: random.Random) -> Image:
    from PIL import Image, ImageDraw

    background = tuple(rng.randint(40, 220) for _ in range(3))
    image = Image.new("RGB", (width, height), background)
    draw = ImageDraw.Draw(image)
    # A second colour over a random part of the frame, so no two pictures share a layout
    # (the near-duplicate check compares coarse brightness gradients).
    other = tuple(rng.randint(0, 255) for _ in range(3))
    x0, y0 = rng.randrange(width), rng.randrange(height)
    draw.polygon([(x0, 0), (width, 0), (width, height), (0, y0)], fill=other)
    r = int(min(width, height) * rng.uniform(0.12, 0.28))
    cx = rng.randint(r, width - r)
    cy = rng.randint(2 * r, height - r)
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=(236, 128, 48))
    draw.polygon(
        [(cx - r, cy - r // 2), (cx - r // 2, cy - r * 2), (cx, cy - r)], fill=(236, 128, 48)
    )
    draw.polygon(
        [(cx + r, cy - r // 2), (cx + r // 2, cy - r * 2), (cx, cy - r)], fill=(236, 128, 48)
    )
    for dx in (-r // 3, r // 3):
        draw.ellipse((cx + dx - r // 10, cy - r // 5, cx + dx + r // 10, cy), fill=(20, 20, 20))
    for _ in range(rng.randint(3, 8)):
        x, y = rng.randrange(width), rng.randrange(height)
        s = rng.randint(8, max(9, width // 12))
        draw.rectangle((x, y, x + s, y + s), fill=tuple(rng.randint(0, 255) for _ in range(3)))
    return image


def _save(image: Image, path: Path) -> None:
    import io

    buffer = io.BytesIO()
    fmt = "JPEG" if path.suffix == ".jpg" else "PNG"
    image.save(buffer, fmt, **({"quality": 92} if fmt == "JPEG" else {}))
    atomic_write_bytes(path, buffer.getvalue())


def write_tiny_set(folder: Path) -> Path:
    """Four small captioned images (64–96 px) for the demo's real CPU training run."""
    from PIL import Image, ImageDraw

    sizes = ((64, 64), (96, 64), (64, 96), (80, 80))
    for index, (width, height) in enumerate(sizes):
        image = Image.new("RGB", (width, height), (40 * index, 100, 150))
        ImageDraw.Draw(image).ellipse((8, 8, width - 8, height - 8), fill=(200, 50, 50))
        _save(image, folder / f"tiny_{index}.png")
        pose = _POSES[index % len(_POSES)]
        atomic_write_text(folder / f"tiny_{index}.txt", f"{TRIGGER}, a small fox spirit {pose}\n")
    return folder
