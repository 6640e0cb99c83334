"""Benchmark ``kura.dataset.inspect_dataset``: cold (fresh stat cache) and warm throughput.

    .venv/bin/python bench/dataset_inspect.py [--count 5000] [--dir DIR] [--keep]

Generates ``--count`` images (512–2048 px per side, random aspect, about half JPEG and half
PNG, each with a caption) into ``--dir`` (a temporary folder by default; an existing folder
that already holds images is reused), then times one inspection with an empty stat cache
(every file read, hashed and integrity-checked; PNGs decoded only when they could be a
resized copy of another image) and one with the cache filled (nothing read). The files
were just written, so the cold figure reads from the page cache, not from disk.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

WORDS = ("myaku", "woman", "garden", "red", "blue", "hat", "smiling", "standing", "window")


def make_image(args: tuple[Path, int]) -> None:
    """Write one picture and its caption; the picture is smooth coloured structure."""
    import numpy as np
    from PIL import Image

    folder, index = args
    rng = random.Random(index)
    width, height = rng.randint(512, 2048), rng.randint(512, 2048)
    coarse = np.random.default_rng(index).integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    image = Image.fromarray(coarse, "RGB").resize((width, height), Image.Resampling.BILINEAR)
    fmt, ext = ("JPEG", "jpg") if index % 2 else ("PNG", "png")
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **({"quality": 90} if fmt == "JPEG" else {"compress_level": 1}))
    (folder / f"img_{index:05d}.{ext}").write_bytes(buffer.getvalue())
    caption = "myaku, " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30)))
    (folder / f"img_{index:05d}.txt").write_text(caption, encoding="utf-8")


def generate(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    existing = sum(1 for p in folder.iterdir() if p.suffix in (".jpg", ".png"))
    if existing >= count:
        print(f"reusing {existing} images in {folder}", file=sys.stderr)
        return
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(make_image, [(folder, i) for i in range(count)], chunksize=16))
    print(f"generated {count} images in {time.perf_counter() - started:.1f}s", file=sys.stderr)


def run(folder: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from kura.dataset import inspect_dataset
    from kura.dataset.statcache import StatCache

    with (
        tempfile.TemporaryDirectory(prefix="kura-bench-cache-") as cache_dir,
        StatCache.open(Path(cache_dir) / "stats.sqlite3") as cache,
    ):
        read_done: list[float] = []

        def note_read_phase(done: int, total: int) -> None:
            if done == total and not read_done:
                read_done.append(time.perf_counter())

        started = time.perf_counter()
        cold = inspect_dataset(folder, cache=cache, progress=note_read_phase)
        cold_s = time.perf_counter() - started
        read_s = read_done[0] - started
        started = time.perf_counter()
        warm = inspect_dataset(folder, cache=cache)
        warm_s = time.perf_counter() - started
    counts = cold.to_dict()["counts"]
    images = counts["images"]
    items = images + counts["videos"] + counts["captions"]
    assert warm.digest == cold.digest
    print(f"files: {images} images, {counts['captions']} captions")
    print(f"cold: {cold_s:.2f}s  {images / cold_s:,.0f} images/s  (fresh stat cache, everything)")
    print(
        f"  of which per-file facts + integrity: {read_s:.2f}s  {images / read_s:,.0f} images/s;"
        f" PNG pixel hashing for near-duplicate candidates and report: {cold_s - read_s:.2f}s"
    )
    print(f"warm: {warm_s:.3f}s  {items / warm_s:,.0f} items/s  (stat cache hit)")
    print(f"problems: {len(cold.problems)}  buckets: {len(cold.buckets)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep a generated temporary folder")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="kura-bench-data-"))
    try:
        generate(folder, args.count)
        run(folder)
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
