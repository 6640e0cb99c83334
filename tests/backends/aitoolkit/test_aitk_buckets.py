"""AI-Toolkit's buckets and batches per epoch (:mod:`kura.backends.aitoolkit.buckets`), and
the steps an epoch makes in the compiled job. The rules are checked against AI-Toolkit's
own data loader in ``test_aitk_buckets_trainer.py``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from aitk_cases import image_dataset, make_inputs, make_spec, video_dataset

from kura.backends.aitoolkit.buckets import (
    DIVISIBILITY,
    bucket_for_image,
    dataset_buckets,
    divisibility_for,
    input_buckets,
    steps_per_epoch,
)
from kura.backends.aitoolkit.compile import job_for
from kura.errors import InvalidInput, Unsupported
from kura.workspace import Workspace


def test_an_image_under_the_resolution_keeps_its_area() -> None:
    # toolkit/buckets.py:21-23: the target area is capped at resolution², never raised
    assert bucket_for_image(640, 480, 1024, 32) == (640, 480)
    # step 64: 640x448 and 640x512 are equally far from 640x480; the first (floor) wins
    assert bucket_for_image(640, 480, 1024, 64) == (640, 448)


def test_a_larger_image_is_scaled_down_to_the_nearest_area_within_the_cap() -> None:
    # 640x480 at 512, step 32: sqrt(512²/307200) scales it to 18.5 x 13.9 steps; 608x448
    # exceeds 512², so 576x448 is the nearest area that fits (toolkit/buckets.py:34-44)
    assert bucket_for_image(640, 480, 512, 32) == (576, 448)
    assert bucket_for_image(300, 200, 512, 32) == (320, 192)  # sides may round up


def test_each_bucket_pads_its_last_batch() -> None:
    # 3 + 2 + 1 items in three buckets, micro-batch 2: 2 + 1 + 1 batches
    (part,) = dataset_buckets(
        ((640, 480, 3), (480, 640, 2), (512, 512, 1)), (512,), divisibility=32, batch_size=2
    )
    assert [(b.width, b.height, b.items, b.batches) for b in part.buckets] == [
        (576, 448, 3, 2),
        (448, 576, 2, 1),
        (512, 512, 1, 1),
    ]
    assert part.batches == 4


def test_repeats_and_resolutions_multiply_the_batches() -> None:
    parts = dataset_buckets(((640, 480, 3),), (512, 768), divisibility=16, batch_size=4, repeats=2)
    assert [(p.resolution, p.items, p.batches) for p in parts] == [(512, 6, 2), (768, 6, 2)]


def test_eleven_batches_an_epoch_where_a_flat_count_makes_six() -> None:
    # eleven images of eleven sizes under the cap (each keeps its own, a multiple of 32),
    # micro-batch 2: every bucket is one padded batch
    sizes = tuple((320 + 32 * i, 320, 1) for i in range(11))
    source = replace(image_dataset(items=11), image_sizes=sizes)
    part = input_buckets(source, 1024, arch="qwen_image", batch_size=2, repeats=1)
    assert len(part.buckets) == 11 and part.batches == 11
    spec = make_spec(
        config={"batch_size": 2},
        training={"effective_batch": 2, "epochs": 3, "sample_every_n_epochs": 1},
        datasets=[{"name": "photos", "resolution": [1024], "repeats": 1}],
    )
    job, _ = job_for(spec, make_inputs(datasets=[source]))
    process = job.config.process[0]
    assert process.train.steps == 33  # 3 epochs x 11 steps (a flat count: 3 x 6)
    assert process.save.save_every == 11 and process.sample is not None  # every epoch
    assert process.sample.sample_every == 11


def test_accumulation_draws_several_batches_per_step() -> None:
    assert steps_per_epoch(11, 1) == 11
    assert steps_per_epoch(11, 2) == 6
    assert steps_per_epoch(1, 4) == 1


def test_a_micro_batch_over_one_needs_the_sizes() -> None:
    unsized = replace(image_dataset(items=4), image_sizes=())
    one_each = input_buckets(unsized, 512, arch="wan21", batch_size=1, repeats=3)
    assert one_each.batches == 12 and not one_each.sized  # shown as unread, not as a bucket
    with pytest.raises(Unsupported, match="size of 0 of its 4"):
        input_buckets(unsized, 512, arch="wan21", batch_size=2, repeats=1)
    with pytest.raises(Unsupported, match="holds videos"):
        input_buckets(video_dataset(), 512, arch="wan21", batch_size=2, repeats=1)


def test_the_bucket_step_is_the_model_class_one() -> None:
    assert divisibility_for("qwen_image") == 32
    assert divisibility_for("wan22_14b") == 16
    assert divisibility_for("sdxl") == 16  # stable_diffusion_model.py:297 doubles the 8
    with pytest.raises(InvalidInput, match="bucket step"):
        divisibility_for("no-such-arch")


def test_every_arch_kura_trains_has_a_bucket_step() -> None:
    from kura.backends.aitoolkit.archs import AITK_MODELS

    missing = sorted({m.arch for m in AITK_MODELS.values()} - set(DIVISIBILITY))
    assert not missing


SIZES = [(1024, 1024)] * 3 + [(1200, 800)] * 3 + [(800, 1200)] * 3 + [(640, 480)]


def _photo_run(tmp_path: Path, base: str, backend: str) -> tuple[Workspace, str]:
    """Dataset ``photos`` of ten images of four sizes, and a run on it at micro-batch 2."""
    from datetime import datetime

    from PIL import Image

    from kura.dataset.registry import add_dataset, set_dataset_values
    from kura.initialize import init_workspace
    from kura.runs.new import create_run

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
        base=base,
        backend=backend,
        sets=["backend.config.batch_size=2", "training.effective_batch=2", "training.epochs=4"],
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id
    return workspace, run_id


def test_the_plan_shows_ai_toolkits_buckets_and_the_steps_they_make(tmp_path: Path) -> None:
    from kura.runs.plan import plan_run

    workspace, run_id = _photo_run(tmp_path, "aitk-qwen-image", "ai-toolkit")
    report = plan_run(workspace, run_id, gpu="h200").to_dict()
    sections = {s["title"]: s["lines"] for s in report["estimate"]["trainer_report"]}
    lines = sections["AI-Toolkit buckets"]
    # at 1024 px and Qwen-Image's 32-pixel step 640x480 keeps its size; 1200x800 is cut to
    # 1184x800; four buckets of 1 + 3 + 3 + 3 make 1 + 2 + 2 + 2 batches of 2
    assert "640x480 × 1 → 1" in lines[0] and "1184x800 × 3 → 2" in lines[0]
    assert lines[-1] == "one epoch: 7 batches, 1 per step → 7 steps"
    plan_md = (workspace.run_dir(run_id) / "plan.md").read_text()
    assert "## AI-Toolkit buckets" in plan_md


def _inspect(workspace: Workspace, *args: str) -> dict[str, object]:
    import io
    import json

    from kura.cli.main import main

    out = io.StringIO()
    assert main(["-w", str(workspace.root), "--json", "dataset", "inspect", *args], stdout=out) == 0
    document: dict[str, object] = json.loads(out.getvalue())
    return document


def test_dataset_inspect_for_an_ai_toolkit_run_shows_its_buckets(tmp_path: Path) -> None:
    workspace, run_id = _photo_run(tmp_path, "aitk-qwen-image", "ai-toolkit")
    document = _inspect(workspace, "photos", "--run", run_id)
    found = document["trainer_buckets"]
    assert isinstance(found, dict)
    assert (found["backend"], found["step"], found["batch_size"]) == ("ai-toolkit", 32, 2)
    buckets = {(b["width"], b["height"]): (b["items"], b["batches"]) for b in found["buckets"]}
    assert buckets == {
        (1024, 1024): (3, 2),
        (1184, 800): (3, 2),
        (800, 1184): (3, 2),
        (640, 480): (1, 1),  # under the area cap: kept, never upscaled
    }
    assert found["batches"] == 7
    assert "toolkit/buckets.py:17" in str(found["rule"])
    assert "trainer_buckets" not in _inspect(workspace, "photos")


def test_dataset_inspect_for_a_musubi_run_shows_musubis_buckets(tmp_path: Path) -> None:
    import math
    from collections import Counter

    from kura.dataset.buckets import BucketRule

    workspace, run_id = _photo_run(tmp_path, "qwen-image", "musubi-tuner")
    found = _inspect(workspace, "photos", "--run", run_id)["trainer_buckets"]
    assert isinstance(found, dict) and found["backend"] == "musubi-tuner"
    width, height = found["resolution"]
    musubi = Counter(BucketRule((width, height), 16).select(size) for size in SIZES)
    buckets = {(b["width"], b["height"]): b["items"] for b in found["buckets"]}
    assert buckets == dict(musubi)
    assert found["batches"] == sum(math.ceil(n / 2) for n in musubi.values())


def test_max_steps_needs_no_batch_count_of_videos_at_a_micro_batch_of_two() -> None:
    # the length is max_steps; only an epoch-based setting would need the batches
    spec = make_spec(
        base="aitk-wan2.2-t2v-a14b",
        datasets=[{"name": "clips", "resolution": [512], "frames": [33]}],
        training={
            "effective_batch": 2,
            "max_steps": 60,
            "epochs": None,
            "sample_prompts": [],
            "sample_every_n_epochs": None,
        },
        config={"batch_size": 2, "save_every_steps": 20, "cache_text_embeddings": True},
    )
    inputs = make_inputs("aitk-wan2.2-t2v-a14b", [video_dataset("clips")])
    job, _ = job_for(spec, inputs)
    assert job.config.process[0].train.steps == 60
    epochs = make_spec(
        base="aitk-wan2.2-t2v-a14b",
        datasets=[{"name": "clips", "resolution": [512], "frames": [33]}],
        training={"effective_batch": 2, "sample_prompts": [], "sample_every_n_epochs": None},
        config={"batch_size": 2, "cache_text_embeddings": True},
    )
    with pytest.raises(Unsupported, match="holds videos"):
        job_for(epochs, inputs)
