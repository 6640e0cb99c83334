"""Benchmark ``kura.dataset.inspect_dataset``: cold (fresh stat cache) and warm throughput.

    .venv/bin/python bench/dataset_inspect.py [--count 5000] [--same-size] [--dir DIR] [--keep]

Generates ``--count`` images (512–2048 px per side, random aspect, or all 1024x1024 with
``--same-size``; about half JPEG and half PNG, each with a caption) into ``--dir`` (a
temporary folder by default; an existing folder that already holds images is reused), then
times one inspection with an empty stat cache (every file read, hashed and
integrity-checked; PNGs decoded only when their shape allows them to be a copy of another
image) and one with the cache filled (nothing read). The cold inspection runs twice, each
with its own empty cache: in Kura's process (a thread pool, as below ``POOL_THRESHOLD``
files) and in worker processes, one per core (as at or above it); it prints both rates
and checks that both reports are equal. It prints the share of PNGs decoded,
the likeness pairs found (the pictures are distinct, so there should be none) and, as the
reference, reading and SHA-256-hashing every file on the same thread count, the floor of
any cold inspection. The files were just written, so the cold figures read from the page
cache, not from disk. Last, a third cold inspection runs in a process of its own while the
resident memory of that process and of every process under it (the fork server and its
workers) is sampled: the peak of the whole tree, beside the files' total size, shows whether
memory grows linearly with the dataset (compare two ``--count`` values).
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

WORDS = ("myaku", "woman", "garden", "red", "blue", "hat", "smiling", "standing", "window")


def make_image(args: tuple[Path, int, bool]) -> None:
    """Write one picture and its caption; the picture is smooth coloured structure."""
    import numpy as np
    from PIL import Image

    folder, index, same_size = args
    rng = random.Random(index)
    width, height = rng.randint(512, 2048), rng.randint(512, 2048)
    if same_size:
        width = height = 1024
    coarse = np.random.default_rng(index).integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    image = Image.fromarray(coarse, "RGB").resize((width, height), Image.Resampling.BILINEAR)
    fmt, ext = ("JPEG", "jpg") if index % 2 else ("PNG", "png")
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **({"quality": 90} if fmt == "JPEG" else {"compress_level": 1}))
    (folder / f"img_{index:05d}.{ext}").write_bytes(buffer.getvalue())
    caption = "myaku, " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30)))
    (folder / f"img_{index:05d}.txt").write_text(caption, encoding="utf-8")


def generate(folder: Path, count: int, same_size: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    existing = sum(1 for p in folder.iterdir() if p.suffix in (".jpg", ".png"))
    if existing >= count:
        print(f"reusing {existing} images in {folder}", file=sys.stderr)
        return
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        jobs = [(folder, i, same_size) for i in range(count)]
        list(pool.map(make_image, jobs, chunksize=16))
    print(f"generated {count} images in {time.perf_counter() - started:.1f}s", file=sys.stderr)


def read_and_hash(folder: Path) -> tuple[float, int]:
    """Seconds to read and SHA-256 every image once, on the inspection's thread count."""
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    from kura.dataset.facts import worker_count

    paths = [p for p in folder.iterdir() if p.suffix in (".jpg", ".png")]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=worker_count()) as pool:
        list(pool.map(lambda p: hashlib.sha256(p.read_bytes()).digest(), paths))
    return time.perf_counter() - started, len(paths)


def _inflate(compressed: bytes) -> int:
    import zlib

    return sum(len(zlib.decompress(compressed)) for _ in range(20))


def parallel_ceiling() -> float:
    """How much faster ``os.cpu_count()`` processes inflate zlib data than one, right now:
    the most any process pool can gain on this machine under its current load."""
    import zlib

    compressed = zlib.compress(random.Random(0).randbytes(1 << 16) * 64, 1)
    workers = os.cpu_count() or 1
    with ProcessPoolExecutor(max_workers=workers) as pool:
        list(pool.map(_inflate, [compressed] * workers))
        started = time.perf_counter()
        list(pool.map(_inflate, [compressed] * workers))
        parallel_s = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(workers):
        _inflate(compressed)
    return (time.perf_counter() - started) / parallel_s


def cold_in_process(folder: Path):  # type: ignore[no-untyped-def]
    """Seconds and report of a cold inspection read on threads in Kura's own process."""
    from kura.dataset import facts as facts_module
    from kura.dataset import inspect_dataset
    from kura.dataset.statcache import StatCache

    threshold = facts_module.POOL_THRESHOLD
    facts_module.POOL_THRESHOLD = sys.maxsize
    try:
        with (
            tempfile.TemporaryDirectory(prefix="kura-bench-cache-") as cache_dir,
            StatCache.open(Path(cache_dir) / "stats.sqlite3") as cache,
        ):
            started = time.perf_counter()
            report = inspect_dataset(folder, cache=cache)
            return time.perf_counter() - started, report
    finally:
        facts_module.POOL_THRESHOLD = threshold


COLD_INSPECTION = (
    "import pathlib, sys, tempfile\n"
    "from kura.dataset import inspect_dataset\n"
    "from kura.dataset.statcache import StatCache\n"
    "with tempfile.TemporaryDirectory() as d, StatCache.open(pathlib.Path(d) / 's.db') as c:\n"
    "    inspect_dataset(pathlib.Path(sys.argv[1]), cache=c)\n"
)


def _resident_bytes(pid: int) -> int:
    try:
        pages = Path(f"/proc/{pid}/statm").read_text().split()[1]
    except (OSError, IndexError):
        return 0  # the process ended between the listing and the read
    return int(pages) * os.sysconf("SC_PAGE_SIZE")


def _tree(root: int) -> list[int]:
    """``root`` and every process below it, from /proc (Linux)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def peak_memory(folder: Path) -> tuple[int, int]:
    """Peak resident bytes of a cold inspection's whole process tree, and of its main
    process alone, sampled every 20 ms."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    child = subprocess.Popen(
        [sys.executable, "-c", COLD_INSPECTION, str(folder)], env={**os.environ, "PYTHONPATH": src}
    )
    peak_tree = peak_main = 0
    while child.poll() is None:
        peak_tree = max(peak_tree, sum(_resident_bytes(pid) for pid in _tree(child.pid)))
        peak_main = max(peak_main, _resident_bytes(child.pid))
        time.sleep(0.02)
    if child.returncode != 0:
        raise SystemExit(f"the cold inspection for the memory figure failed ({child.returncode})")
    return peak_tree, peak_main


def run(folder: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from kura.dataset import facts as facts_module
    from kura.dataset import inspect as inspect_module
    from kura.dataset import inspect_dataset, likeness
    from kura.dataset.statcache import StatCache

    ceiling_before = parallel_ceiling()
    in_process_s, in_process = cold_in_process(folder)
    decoded: list[str] = []
    confirmed: list[bool] = []
    real_candidates, real_confirm = inspect_module.hash_candidates, likeness.confirm

    def counting_candidates(scan, facts):  # type: ignore[no-untyped-def]
        found = real_candidates(scan, facts)
        decoded.extend(found)
        return found

    def counting_confirm(*args):  # type: ignore[no-untyped-def]
        result = real_confirm(*args)
        confirmed.append(result is not None)
        return result

    inspect_module.hash_candidates = counting_candidates  # type: ignore[assignment]
    likeness.confirm = counting_confirm  # type: ignore[assignment]

    with (
        tempfile.TemporaryDirectory(prefix="kura-bench-cache-") as cache_dir,
        StatCache.open(Path(cache_dir) / "stats.sqlite3") as cache,
    ):
        facts_module.POOL_THRESHOLD = 0
        read_done: list[float] = []

        def note_read_phase(done: int, total: int) -> None:
            if done == total and not read_done:
                read_done.append(time.perf_counter())

        started = time.perf_counter()
        cold = inspect_dataset(folder, cache=cache, progress=note_read_phase)
        cold_s = time.perf_counter() - started
        read_s = read_done[0] - started
        decoded_cold, confirmed_cold = len(decoded), len(confirmed)
        started = time.perf_counter()
        warm = inspect_dataset(folder, cache=cache)
        warm_s = time.perf_counter() - started
    document = cold.to_dict()
    counts = document["counts"]
    images = counts["images"]
    pngs = sum(1 for p in folder.iterdir() if p.suffix == ".png")
    reference_s, files = read_and_hash(folder)
    ceiling_after = parallel_ceiling()
    items = images + counts["videos"] + counts["captions"]
    assert warm.digest == cold.digest
    assert in_process.to_dict() == document, "the pool's report differs from the in-process one"
    print(f"files: {images} images, {counts['captions']} captions")
    print(f"cold: {cold_s:.2f}s  {images / cold_s:,.0f} images/s  (fresh stat cache, everything)")
    print(
        f"cold in Kura's process (threads): {in_process_s:.2f}s  {images / in_process_s:,.0f}"
        f" images/s; worker processes ({os.cpu_count()}):"
        f" {images / cold_s:,.0f} images/s = {in_process_s / cold_s:.2f}x; reports equal"
    )
    print(
        f"  reference: {os.cpu_count()} processes inflating zlib data vs one, before and after:"
        f" {ceiling_before:.2f}x, {ceiling_after:.2f}x (the most a pool can gain under this load)"
    )
    print(
        f"  of which per-file facts + integrity: {read_s:.2f}s  {images / read_s:,.0f} images/s;"
        f" PNG decoding for likeness candidates, pair search and report: {cold_s - read_s:.2f}s"
    )
    print(
        f"  PNGs decoded for hashing: {decoded_cold} of {pngs} ({decoded_cold / max(1, pngs):.0%});"
        f" candidate pairs checked on pixels: {confirmed_cold};"
        f" likeness pairs found: {len(document['near_duplicate_pairs'])}"
    )
    print(
        f"reference: read + sha256 of every image: {reference_s:.2f}s"
        f"  {files / reference_s:,.0f} images/s"
    )
    decoded_warm, confirmed_warm = len(decoded) - decoded_cold, len(confirmed) - confirmed_cold
    print(
        f"warm: {warm_s:.3f}s  {items / warm_s:,.0f} items/s  (stat cache hit; PNGs decoded:"
        f" {decoded_warm}, pairs checked on pixels: {confirmed_warm})"
    )
    print(f"problems: {len(cold.problems)}  buckets: {len(cold.buckets)}")
    tree, main = peak_memory(folder)
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    mib = 1 << 20
    print(
        f"memory, cold: peak {tree / mib:,.0f} MiB for the process tree, {main / mib:,.0f} MiB"
        f" for Kura's process (the files: {size / mib:,.0f} MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--same-size", action="store_true", help="every image 1024x1024")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep a generated temporary folder")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="kura-bench-data-"))
    try:
        generate(folder, args.count, args.same_size)
        run(folder)
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
