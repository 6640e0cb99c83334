"""Paired-edit controls and video facts."""

from __future__ import annotations

from pathlib import Path

import pytest
from dataset_builders import Builder

from kura.dataset import inspect_dataset


@pytest.fixture
def controls(tmp_path: Path) -> Builder:
    return Builder(tmp_path / "control")


def test_paired_edit_controls(build, controls) -> None:
    build.image("one.png", (64, 64), seed=1)
    build.image("multi.png", (64, 64), seed=2)
    build.image("lonely.png", (64, 64), seed=3)
    build.image("bad.png", (64, 64), seed=4)
    controls.image("one.jpg", (64, 64), seed=21, caption=None)
    controls.image("multi_0.png", (64, 64), seed=22, caption=None)
    controls.image("multi_1.png", (128, 64), seed=23, caption=None)
    controls.image("bad_left.png", (64, 64), seed=24, caption=None)
    controls.image("stray.png", (64, 64), seed=25, caption=None)
    result = inspect_dataset(build.root, control_dir=controls.root)
    data = result.to_dict()
    pairs = data["pairs"]
    assert pairs["targets"] == 4
    assert pairs["with_controls"] == 2
    assert pairs["control_counts"] == {"1": 1, "2": 1}
    assert pairs["missing"] == ["lonely.png", "bad.png"]
    assert pairs["orphans"] == ["../control/stray.png"]
    assert [(m["target"], m["control_size"]) for m in pairs["size_mismatches"]] == [
        ("multi.png", [128, 64])
    ]
    problems = {(p.path, p.code) for p in result.problems}
    assert problems == {
        ("lonely.png", "missing-control"),
        ("bad.png", "missing-control"),
        ("../control/stray.png", "orphan-control"),
    }
    assert data["counts"]["controls"] == 5
    assert data["task_suggestion"]["task"] == "paired-edit"
    keys = [q["key"] for q in data["questions"]]
    assert keys == ["intent.trigger", "intent.task", "intent.pair_direction"]
    assert data["questions"][1]["options"][0] == "paired-edit"


def test_control_folder_inside_dataset_is_not_nested_media(build) -> None:
    build.image("a.png", seed=1)
    inner = Builder(build.root / "control")
    inner.image("a.png", seed=2, caption=None)
    result = inspect_dataset(build.root, control_dir=inner.root)
    assert result.problems == ()
    assert result.to_dict()["pairs"]["with_controls"] == 1


def test_missing_control_folder(build, tmp_path: Path) -> None:
    from kura.errors import NotFound

    build.image("a.png")
    with pytest.raises(NotFound):
        inspect_dataset(build.root, control_dir=tmp_path / "absent")


def test_videos_frames_and_4n1(build) -> None:
    build.video("good.mp4", 17)
    build.video("long.mp4", 20)
    result = inspect_dataset(build.root)
    data = result.to_dict()
    rows = {v["path"]: v for v in data["videos"]}
    assert rows["good.mp4"]["frames"] == 17
    assert rows["good.mp4"]["fps"] == 8.0
    assert rows["good.mp4"]["duration"] == pytest.approx(17 / 8, abs=0.01)
    assert (rows["good.mp4"]["width"], rows["good.mp4"]["height"]) == (64, 48)
    assert rows["good.mp4"]["frames_4n1"] is True
    assert rows["long.mp4"]["frames"] == 20
    assert rows["long.mp4"]["frames_4n1"] is False
    assert rows["long.mp4"]["usable_frames"] == 17
    (problem,) = result.problems
    assert (problem.path, problem.code) == ("long.mp4", "video-frames")
    assert "17" in problem.fix
    assert data["task_suggestion"]["task"] == "video"
    assert data["counts"]["videos"] == 2


def test_broken_video(build) -> None:
    build.raw("bad.mp4", b"not a video at all")
    (problem,) = inspect_dataset(build.root).problems
    assert problem.code == "broken-media"
