"""The plan buckets images and clips at the run's resolution (issue 23 item 6).

A dataset is inspected at one resolution (1024 px by default); Qwen-Image, HiDream-O1 and
Wan train at their native size. Musubi buckets every image by its own size at the run's
resolution (``dataset/bucket.py`` ``BucketSelector``), and a batch never mixes buckets, so
steps per epoch are the sum over buckets of ``ceil(count / batch)``.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime
from pathlib import Path

from PIL import Image

from kura.dataset.buckets import BucketRule
from kura.dataset.registry import add_dataset, set_dataset_values
from kura.initialize import init_workspace
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.runs.store import load_run
from kura.yamlio import write_yaml

SIZES = [(1024, 1024)] * 3 + [(1200, 800)] * 3 + [(800, 1200)] * 3 + [(1536, 1024)]


def test_a_qwen_image_run_at_batch_2_counts_musubis_buckets_at_its_own_size(
    tmp_path: Path,
) -> None:
    workspace, _ = init_workspace(tmp_path / "ws")
    folder = tmp_path / "photos"
    folder.mkdir()
    for index, size in enumerate(SIZES):
        Image.new("RGB", size, (index * 20, 80, 120)).save(folder / f"{index:02d}.png")
        (folder / f"{index:02d}.txt").write_text(f"myaku, picture {index}\n")
    add_dataset(workspace, "photos", folder, resolution=(1024, 1024))
    set_dataset_values(workspace, "photos", ["intent.task=style"])
    run_id = create_run(
        workspace,
        datasets=["photos"],
        base="qwen-image",
        sets=["backend.config.batch_size=2", "training.effective_batch=2", "training.epochs=4"],
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id
    spec, _ = load_run(workspace, run_id)
    width, height = spec.datasets[0].resolution
    assert (width, height) == (1328, 1328)  # drafted at Qwen-Image's native size
    rule = BucketRule((width, height), 16)
    musubi = Counter(rule.select(size) for size in SIZES)
    per_epoch = sum(math.ceil(count / 2) for count in musubi.values())
    report = plan_run(workspace, run_id, gpu="h200").to_dict()
    config = report["estimate"]["config"]
    planned = Counter({(b["width"], b["height"]): b["count"] for b in config["buckets"]})
    assert planned == musubi
    assert config["total_steps"] == 4 * per_epoch
    assert per_epoch > math.ceil(len(SIZES) / 2)  # one bucket would plan fewer steps


def _clip(path: Path, size: tuple[int, int], frames: int) -> None:
    import av
    import numpy as np

    width, height = size
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=16)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(frames):
            pixels = np.full((height, width, 3), index * 9 % 256, dtype=np.uint8)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")))
        container.mux(stream.encode())


def test_a_clip_is_bucketed_from_its_own_size_at_the_runs_resolution(tmp_path: Path) -> None:
    """A 1000x600 clip inspected at 1024 px lands in 1056x624; placing that bucket again at
    Wan's 832x480 gives 832x480, but Musubi buckets the clip's own first frame: 800x496."""
    workspace, _ = init_workspace(tmp_path / "ws")
    folder = tmp_path / "clips"
    folder.mkdir()
    _clip(folder / "wide.mp4", (1000, 600), 20)
    (folder / "wide.txt").write_text("a walk\n")
    add_dataset(workspace, "clips", folder, resolution=(1024, 1024))
    set_dataset_values(workspace, "clips", ["intent.task=style"])
    run_id = create_run(
        workspace,
        datasets=["clips"],
        base="wan2.1-t2v-1.3b",
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id
    _, document = load_run(workspace, run_id)
    document["datasets"][0]["frames"] = [9]
    document["datasets"][0]["resolution"] = [832, 480]
    write_yaml(workspace.run_dir(run_id) / "run.yaml", document)
    report = plan_run(workspace, run_id, gpu="h200").to_dict()
    buckets = report["estimate"]["config"]["buckets"]
    assert [(b["width"], b["height"], b["frames"]) for b in buckets] == [(800, 496, 9)]
    assert BucketRule((832, 480), 16).select((1000, 600)) == (800, 496)


def test_a_mixed_wan_folder_buckets_images_and_clips_at_the_runs_resolution(
    tmp_path: Path,
) -> None:
    """Wan at its native 832x480, micro-batch 2, over a folder inspected at 1024 px: its
    images and clips each go to Musubi's bucket for their own size at 832x480 (images at
    dataset/image_video_dataset.py:445, a clip from its first frame at :827), and batches
    never mix buckets, so the plan's steps per epoch are Musubi's, not one bucket's."""
    workspace, _ = init_workspace(tmp_path / "ws")
    folder = tmp_path / "mixed"
    folder.mkdir()
    for index, size in enumerate(SIZES):
        Image.new("RGB", size, (index * 20, 80, 120)).save(folder / f"{index:02d}.png")
        (folder / f"{index:02d}.txt").write_text(f"myaku, picture {index}\n")
    clips = [(1000, 600), (1000, 600), (480, 832)]
    for index, size in enumerate(clips):
        _clip(folder / f"clip{index}.mp4", size, 20)
        (folder / f"clip{index}.txt").write_text(f"myaku walking {index}\n")
    add_dataset(workspace, "mixed", folder, resolution=(1024, 1024))
    set_dataset_values(workspace, "mixed", ["intent.task=style"])
    run_id = create_run(
        workspace,
        datasets=["mixed"],
        base="wan2.1-t2v-14b",
        sets=["backend.config.batch_size=2", "training.effective_batch=2", "training.epochs=2"],
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id
    _, document = load_run(workspace, run_id)
    document["datasets"][0]["resolution"] = [832, 480]
    document["datasets"][0]["frames"] = [9]
    write_yaml(workspace.run_dir(run_id) / "run.yaml", document)
    rule = BucketRule((832, 480), 16)
    images = Counter(rule.select(size) for size in SIZES)
    videos = Counter(rule.select(size) for size in clips)
    per_epoch = sum(math.ceil(n / 2) for n in (*images.values(), *videos.values()))
    config = plan_run(workspace, run_id, gpu="h200").to_dict()["estimate"]["config"]
    planned = Counter(
        {(b["width"], b["height"], b["frames"]): b["count"] for b in config["buckets"]}
    )
    expected = Counter({(w, h, 1): n for (w, h), n in images.items()})
    expected.update({(w, h, 9): n for (w, h), n in videos.items()})
    assert planned == expected
    assert config["total_steps"] == 2 * per_epoch
    assert len(images) > 1 and len(videos) > 1  # one bucket would plan fewer steps
