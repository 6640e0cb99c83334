"""Video runs planned as ``run new`` drafts them (issue 23 items 3, 5 and 8): FramePack's
``max_frames`` is drafted, plan never raises a traceback, latent caching is sized at the
whole clip Musubi encodes, and a dataset that yields no item is refused with its cause."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from kura.cli.main import main
from kura.errors import SpecError
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.runs.store import load_run
from kura.workspace import Workspace
from kura.yamlio import write_yaml
from tests.dataset.dataset_builders import Builder

NOW = datetime(2026, 12, 1, 9, 0)


def _clips(ws: Workspace, tmp_path: Path, frames: tuple[int, ...], fps: int = 30) -> None:
    from kura.dataset.registry import add_dataset, set_dataset_values

    clips = Builder(tmp_path / "clips")
    for index, count in enumerate(frames):
        clips.video(f"c{index}.mp4", count, fps=fps, caption=f"myaku walking {index}")
    add_dataset(ws, "clips", tmp_path / "clips", resolution=(640, 640))
    set_dataset_values(ws, "clips", ["intent.task=character"])


def _framepack(ws: Workspace, tmp_path: Path, frames: tuple[int, ...] = (80, 60)) -> str:
    _clips(ws, tmp_path, frames)
    return create_run(ws, datasets=["clips"], base="framepack", now=NOW).run_id


def test_run_new_drafts_framepack_max_frames_with_its_source(ws: Workspace, tmp_path: Path) -> None:
    """Musubi's knowledge card drafts FramePack's video entries with ``full`` extraction and
    its own ``max_frames`` default (dataset/config_utils.py:71), which ``full`` needs."""
    spec, _ = load_run(ws, _framepack(ws, tmp_path))
    assert (spec.datasets[0].frame_extraction, spec.datasets[0].max_frames) == ("full", 129)
    why = spec.provenance["datasets.0.max_frames"]
    assert why.startswith("musubi-tuner (videos):") and "dataset/config_utils.py:71" in why


def test_a_framepack_run_as_drafted_plans(ws: Workspace, tmp_path: Path) -> None:
    report = plan_run(ws, _framepack(ws, tmp_path), gpu="h100-sxm").to_dict()
    assert {s["step"] for s in report["estimate"]["steps"]} >= {"cache_latents", "train"}


def test_plan_refuses_what_compile_refuses_before_sizing_never_a_traceback(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _framepack(ws, tmp_path)
    _, document = load_run(ws, run_id)
    del document["datasets"][0]["max_frames"]
    write_yaml(ws.run_dir(run_id) / "run.yaml", document)
    from kura.backends.musubi.backend import MusubiBackend

    def sized_first(*args: object, **kwargs: object) -> None:
        raise AssertionError("the run was sized before compile refused it")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MusubiBackend, "fit", sized_first)
        with pytest.raises(SpecError, match="frame_extraction `full` needs max_frames"):
            plan_run(ws, run_id, gpu="h100-sxm")
    capsys.readouterr()
    code = main(["-w", str(ws.root), "--json", "run", "plan", run_id, "--gpu", "h100-sxm"])
    out = capsys.readouterr().out
    assert code != 0 and json.loads(out)["error"]["type"] == "spec-error"


def test_framepack_latent_caching_is_sized_at_the_whole_aligned_clip(
    ws: Workspace, tmp_path: Path
) -> None:
    """fpack_cache_latents.py:63-85 encodes the section-aligned clip in one VAE call: a
    120-frame clip (117 as 4n+1, 30 latent frames) is 3 sections, 109 frames encoded."""
    from kura.backends.musubi.estimator.steps import ENCODERS, latent_cache_gib

    report = plan_run(ws, _framepack(ws, tmp_path, (120,)), gpu="h100-sxm").to_dict()
    cache = next(s for s in report["estimate"]["steps"] if s["step"] == "cache_latents")
    note = cache["notes"][0]
    assert note.startswith("largest item ") and note.endswith("x109")
    width, height = (int(v) for v in note.removeprefix("largest item ").split("x")[:2])
    expected = latent_cache_gib(
        ENCODERS["framepack"], width, height, 109, chunk=False, tiling=False
    )
    assert cache["peak_gib"] == pytest.approx(expected, abs=0.01)
    assert (
        cache["peak_gib"]
        > latent_cache_gib(ENCODERS["framepack"], width, height, 33, chunk=False, tiling=False)
        * 1.5
    )  # not one 33-frame section


def _wan(ws: Workspace, tmp_path: Path, frames: tuple[int, ...], targets: list[int]) -> str:
    _clips(ws, tmp_path, frames)
    run_id = create_run(ws, datasets=["clips"], base="wan2.1-t2v-1.3b", now=NOW).run_id
    _, document = load_run(ws, run_id)
    document["datasets"][0]["frames"] = targets
    write_yaml(ws.run_dir(run_id) / "run.yaml", document)
    return run_id


def test_a_dataset_that_yields_no_item_is_refused_with_its_cause_and_fix(
    ws: Workspace, tmp_path: Path
) -> None:
    # 60 frames at 30 fps are 30 at Wan's 16 fps: none reaches 81 frames (head extraction)
    run_id = _wan(ws, tmp_path, (60, 60), [81])
    with pytest.raises(SpecError, match="gives wan no training item") as refused:
        plan_run(ws, run_id, gpu="h200")
    assert "at 16 fps" in refused.value.message and "81" in refused.value.message
    assert "datasets[].frames" in (refused.value.hint or "")
    assert not (ws.run_dir(run_id) / "plan.md").exists()


def test_videos_that_give_no_item_are_named_in_a_warning(ws: Workspace, tmp_path: Path) -> None:
    # c0 has 30 frames at 16 fps (no 45-frame item), c1 has 96
    report = plan_run(ws, _wan(ws, tmp_path, (60, 180), [45]), gpu="h200").to_dict()
    warnings = report["compile"]["warnings"]
    assert any("c0.mp4 give no item" in w for w in warnings), warnings


def test_a_framepack_prompt_without_a_start_image_is_refused_at_plan(
    ws: Workspace, tmp_path: Path
) -> None:
    """fpack_train_network.py:100-101 asserts every sample prompt's image_path when training
    starts: a prompt written into run.yaml without ``--i`` never plans "fits"."""
    from PIL import Image

    run_id = _framepack(ws, tmp_path)
    _, document = load_run(ws, run_id)
    document["training"]["sample_prompts"] = ["myaku walking --w 640 --h 640"]
    document["training"]["sample_every_n_epochs"] = 1
    write_yaml(ws.run_dir(run_id) / "run.yaml", document)
    with pytest.raises(SpecError, match=r"samples from a start image.*fpack_train_network") as no:
        plan_run(ws, run_id, gpu="h100-sxm")
    assert "--i" in (no.value.hint or "")
    assert not (ws.run_dir(run_id) / "plan.md").exists()
    start = tmp_path / "start.png"
    Image.new("RGB", (640, 640)).save(start)
    document["training"]["sample_prompts"] = [f"myaku walking --w 640 --h 640 --i {start}"]
    write_yaml(ws.run_dir(run_id) / "run.yaml", document)
    plan_run(ws, run_id, gpu="h100-sxm")
    assert (ws.run_dir(run_id) / "plan.md").exists()


@pytest.mark.parametrize(("clips", "together"), [((120, 120), 2), ((120,), 1)])
def test_framepack_latent_caching_encodes_a_batch_of_one_bucket_in_one_vae_call(
    ws: Workspace, tmp_path: Path, clips: tuple[int, ...], together: int
) -> None:
    """At batch_size 2 the caching step batches the clips of one bucket and frame count
    (dataset/image_video_dataset.py:776-806) and encodes the batch in one VAE call
    (fpack_cache_latents.py:46-85): two 120-frame clips are one call of 2 x 109 frames;
    a clip alone in its bucket is a call of one."""
    from kura.backends.musubi.estimator.steps import ENCODERS, latent_cache_gib

    run_id = _framepack(ws, tmp_path, clips)
    _, document = load_run(ws, run_id)
    document["backend"]["config"].update(
        batch_size=2, gradient_accumulation_steps=1, split_attn=True
    )
    document["backend"]["reasons"].update(batch_size="two clips a step", split_attn="batch 2")
    document["training"]["effective_batch"] = 2
    write_yaml(ws.run_dir(run_id) / "run.yaml", document)
    report = plan_run(ws, run_id, gpu="h200").to_dict()
    cache = next(s for s in report["estimate"]["steps"] if s["step"] == "cache_latents")
    size = cache["notes"][0].removeprefix("largest item ").split(",")[0]
    width, height, frames = (int(v) for v in size.split("x"))
    assert frames == 109
    assert (f"{together} per VAE call" in cache["notes"][0]) is (together > 1)
    expected = latent_cache_gib(
        ENCODERS["framepack"], width, height, 109, chunk=False, tiling=False, items=together
    )
    assert cache["peak_gib"] == pytest.approx(expected, abs=0.01)
