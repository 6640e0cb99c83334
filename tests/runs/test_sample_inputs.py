"""Files a sample prompt names are inputs of the approved run (issue 23 item 1).

``--i`` / ``--ci`` in a sample prompt are host paths: in a container each is mounted
read-only and the compiled prompt names the container's path; on the host it keeps its own.
Either way the lock records its digest and the launch gate refuses a file changed or gone
after approval, as it does a model file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from PIL import Image

from kura.errors import CheckFailed, InvalidInput, SpecError
from kura.runs.approval import approve_run, check_gate
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from tests.dataset.dataset_builders import Builder
from tests.runs.fake_checkout import use_fake_checkout

BUNDLE = "flux2-klein-base-4b"


def _image(path: Path, colour: tuple[int, int, int] = (10, 20, 30)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (64, 48), colour).save(path)
    return path


def _run(ws: Workspace, prompt: str, *extra: str) -> str:
    prompts = json.dumps([prompt])
    return create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=[
            f"training.sample_prompts={prompts}",
            "training.sample_every_n_epochs=2",
            *extra,
        ],
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id


def _clips(ws: Workspace, tmp_path: Path) -> str:
    from kura.dataset.registry import add_dataset, set_dataset_values

    clips = Builder(tmp_path / "clips")
    for index in range(2):
        clips.video(f"c{index}.mp4", 80, fps=30, caption=f"myaku walking {index}")
    add_dataset(ws, "clips", clips.root, resolution=(640, 640))
    set_dataset_values(ws, "clips", ["intent.task=character"])
    return "clips"


def _pairs(ws: Workspace, tmp_path: Path) -> str:
    from kura.dataset.registry import add_dataset, set_dataset_values

    targets, controls = tmp_path / "pairs" / "targets", tmp_path / "pairs" / "controls"
    for index in range(3):
        _image(targets / f"{index}.png", (30 * index, 90, 40))
        (targets / f"{index}.txt").write_text(f"myaku, edit {index}\n", encoding="utf-8")
        _image(controls / f"{index}.png", (30 * index, 0, 200))
    add_dataset(ws, "pairs", targets, control=controls, resolution=(512, 512))
    set_dataset_values(
        ws,
        "pairs",
        ["intent.task=paired-edit", "intent.pair_direction=control-to-target"],
    )
    return "pairs"


def _compiled(ws: Workspace, run_id: str, name: str) -> str:
    return (ws.run_dir(run_id) / "compiled" / name).read_text(encoding="utf-8")


def test_a_container_run_mounts_the_prompt_image_and_names_the_container_path(
    ws: Workspace, tmp_path: Path
) -> None:
    picture = _image(tmp_path / "my pictures" / "start.png")
    run_id = _run(ws, f"myaku smiling --w 512 --h 512 --ci {picture}")
    plan_run(ws, run_id, gpu="rtx-4090")
    line = _compiled(ws, run_id, "sample_prompts.txt").strip()
    assert line == "myaku smiling --w 512 --h 512 --ci /kura/sample-inputs/00-start.png"
    mounts = json.loads(_compiled(ws, run_id, "container.json"))["mounts"]
    mount = next(m for m in mounts if m["target"] == "/kura/sample-inputs/00-start.png")
    assert (mount["source"], mount["read_only"]) == (str(picture), True)
    locked = json.loads(_compiled(ws, run_id, "run.lock"))["inputs"]
    assert [(i["path"], i["size"]) for i in locked] == [(str(picture), picture.stat().st_size)]


@pytest.mark.parametrize(
    ("base", "flag", "dataset"),
    [
        # fpack_train_network.py:100-110 opens every prompt's --i when training starts
        ("framepack", "i", _clips),
        # flux_kontext_train_network.py:175-177 opens the first --ci when it samples
        ("flux1-kontext-dev", "ci", _pairs),
    ],
)
def test_the_file_a_trainer_opens_is_a_mount_of_the_approved_run(
    ws: Workspace, tmp_path: Path, base: str, flag: str, dataset: Callable[..., str]
) -> None:
    picture = _image(tmp_path / "my pictures" / "start.png")
    run_id = create_run(
        ws,
        datasets=[dataset(ws, tmp_path)],
        base=base,
        sets=[
            "training.sample_prompts=" + json.dumps([f"myaku --w 512 --h 512 --{flag} {picture}"]),
            "training.sample_every_n_epochs=2",
        ],
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id
    plan_run(ws, run_id, gpu="h100-sxm")
    target = "/kura/sample-inputs/00-start.png"
    line = _compiled(ws, run_id, "sample_prompts.txt").strip()
    assert line == f"myaku --w 512 --h 512 --{flag} {target}"
    mounts = json.loads(_compiled(ws, run_id, "container.json"))["mounts"]
    assert [(m["source"], m["read_only"]) for m in mounts if m["target"] == target] == [
        (str(picture), True)
    ]
    locked = json.loads(_compiled(ws, run_id, "run.lock"))["inputs"]
    assert [i["path"] for i in locked] == [str(picture)]
    _image(picture, (200, 0, 0))  # the approval binds it
    with pytest.raises(CheckFailed, match="changed since its plan"):
        approve_run(ws, run_id)


def test_the_host_executor_keeps_the_path_and_locks_it(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_checkout(ws, tmp_path, BUNDLE, monkeypatch)
    picture = _image(tmp_path / "start.png")
    run_id = _run(ws, f"myaku --ci {picture}", "execution.executor=host")
    plan_run(ws, run_id, gpu="rtx-4090")
    assert _compiled(ws, run_id, "sample_prompts.txt").strip() == f"myaku --ci {picture}"
    locked = json.loads(_compiled(ws, run_id, "run.lock"))["inputs"]
    assert [i["path"] for i in locked] == [str(picture)]


def test_a_prompt_image_changed_or_gone_after_approval_stops_the_launch(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_checkout(ws, tmp_path, BUNDLE, monkeypatch)  # model files the gate can check
    picture = _image(tmp_path / "start.png")
    run_id = _run(ws, f"myaku --ci {picture}", "execution.executor=host")
    plan_run(ws, run_id, gpu="rtx-4090")
    approve_run(ws, run_id)
    check_gate(ws, run_id)  # as approved: passes
    _image(picture, (200, 0, 0))
    with pytest.raises(CheckFailed, match=r"start\.png changed after approval"):
        check_gate(ws, run_id)
    picture.unlink()
    with pytest.raises(CheckFailed, match=r"start\.png is gone after approval"):
        check_gate(ws, run_id)


def test_a_prompt_image_changed_between_plan_and_approve_is_refused(
    ws: Workspace, tmp_path: Path
) -> None:
    picture = _image(tmp_path / "start.png")
    run_id = _run(ws, f"myaku --ci {picture}")
    plan_run(ws, run_id, gpu="rtx-4090")
    _image(picture, (0, 200, 0))
    with pytest.raises(CheckFailed, match="changed since its plan"):
        approve_run(ws, run_id)


def test_a_missing_or_relative_prompt_image_is_refused_at_plan(
    ws: Workspace, tmp_path: Path
) -> None:
    missing = _run(ws, f"myaku --ci {tmp_path / 'nope.png'}")
    with pytest.raises(InvalidInput, match=r"nope\.png is not a file"):
        plan_run(ws, missing, gpu="rtx-4090")
    relative = create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=[
            'training.sample_prompts=["myaku --ci start.png"]',
            "training.sample_every_n_epochs=2",
        ],
        now=datetime(2026, 12, 1, 10, 0),
    ).run_id
    with pytest.raises(SpecError, match="not an absolute path"):
        plan_run(ws, relative, gpu="rtx-4090")
