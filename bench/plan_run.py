"""`kura run plan` on an N-image dataset, warm (inspection and digests cached).

Builds a workspace with N distinct small JPEGs and captions, registers the dataset, puts the
FLUX.2 klein 4B bundle's header-only stand-ins in a private hub cache, drafts a run, plans
it once (cold) and then R more times, and prints the median warm time (wall and this
process's CPU time, which the shared load disturbs less) with a breakdown of the top
cumulative functions from cProfile. Target: < 0.5 s warm at 5,000 images (issue 27).

    .venv/bin/python bench/plan_run.py [--images 1000] [--repeats 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import tempfile
import time
from pathlib import Path

from PIL import Image


def build(root: Path, images: int) -> tuple[object, str]:
    from kura.dataset.registry import add_dataset, set_dataset_values
    from kura.initialize import init_workspace
    from kura.models.bundles import get_bundle
    from kura.models.standins import install_bundle_in_hub_cache
    from kura.runs.new import create_run

    cache = root / "hf-cache"
    os.environ["HF_HUB_CACHE"] = str(cache)
    install_bundle_in_hub_cache(get_bundle("flux2-klein-base-4b"), cache)
    folder = root / "incoming"
    folder.mkdir()
    for index in range(images):
        colour = (index * 37 % 256, index * 91 % 256, index * 13 % 256)
        image = Image.new("RGB", (96 + index % 7 * 16, 96), colour)
        image.putpixel((index % 90, index % 90), (255 - colour[0], 0, 0))
        image.save(folder / f"{index:05d}.jpg", quality=90)
        (folder / f"{index:05d}.txt").write_text(f"myaku, picture {index}\n")
    workspace, _ = init_workspace(root / "ws")
    add_dataset(workspace, "myaku", folder, resolution=(1024, 1024))
    set_dataset_values(workspace, "myaku", ["intent.task=character"])
    run_id = create_run(workspace, datasets=["myaku"], base="flux2-klein-base-4b").run_id
    return workspace, run_id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    from kura.runs.plan import plan_run

    with tempfile.TemporaryDirectory() as tmp:
        workspace, run_id = build(Path(tmp), args.images)
        start = time.perf_counter()
        plan_run(workspace, run_id, gpu="rtx-4090")  # type: ignore[arg-type]
        cold = time.perf_counter() - start
        warm, warm_cpu = [], []
        for _ in range(args.repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            plan_run(workspace, run_id, gpu="rtx-4090")  # type: ignore[arg-type]
            warm.append(time.perf_counter() - start)
            warm_cpu.append(time.process_time() - start_cpu)
        print(
            f"images {args.images}: first plan {cold:.2f} s, warm median "
            f"{statistics.median(warm):.3f} s wall (min {min(warm):.3f}),"
            f" {statistics.median(warm_cpu):.3f} s CPU (min {min(warm_cpu):.3f}); target < 0.5 s"
        )
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            plan_run(workspace, run_id, gpu="rtx-4090")  # type: ignore[arg-type]
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
