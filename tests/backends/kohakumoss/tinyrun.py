"""A tiny captioned dataset and the CPU settings that let KohakuMoss train the tiny model in
seconds (shared by the CLI real-run test and the KohakuMoss sweep test)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

CAPTIONS = (
    "kura, 1girl, smile, red hair",
    "kura, 1girl, standing, blue dress",
    "kura, portrait, red hair, outdoors",
    "kura, 1girl, sitting, red hair",
)
CPU = {
    "vram_layer": "8g",
    "SAVE_EVERY": 3,
    "LOG_EVERY": 1,
    "MAX_TOKENS": 512,
    "NUM_WORKERS": 0,
    "DATA_SCAN_WORKERS": 1,
    "PIN_MEMORY": "false",
    "TUNE": "off",
    "SAMPLE_STEPS": 2,
    "SAMPLE_SIZE": "[64,64]",
    "SAMPLE_SKIP_LAYERS": "[]",
}


def images(folder: Path) -> Path:
    folder.mkdir(parents=True)
    sizes = ((64, 64), (96, 64), (64, 96), (80, 80))
    for i, (size, caption) in enumerate(zip(sizes, CAPTIONS, strict=True)):
        image = Image.new("RGB", size, (40 * i, 100, 150))
        ImageDraw.Draw(image).ellipse((8, 8, size[0] - 8, size[1] - 8), fill=(200, 50, 50))
        image.save(folder / f"img{i}.png")
        (folder / f"img{i}.txt").write_text(caption, encoding="utf-8")
    return folder
