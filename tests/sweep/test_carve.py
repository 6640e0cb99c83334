"""The held-out split of paired and video data: pairs carved together, both sides in each
part, nothing lost, a trial trains on its training part only; incomplete pairs refused."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from kura.cli.main import main
from kura.dataset.registry import (
    add_dataset,
    load_inspection,
    read_dataset,
    set_dataset_values,
    validate_dataset,
)
from kura.errors import CheckFailed, Unsupported
from kura.sweep.carve import carve_split
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.records import load_trials, sweep_dir
from kura.sweep.worker import run_worker
from kura.workspace import Workspace
from tests.dataset.dataset_builders import Builder
from tests.sweep.conftest import write_space

SPACE = """\
axes:
  training.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
objective: {metric: heldout_loss, validation_fraction: 0.3}
early_stop: {enabled: false}
"""
# targets 0..5; 0–3 have one control (same stem), 4 and 5 two each (_0, _1); 1_x.png is a
# target of its own whose stem starts with another target's: pairing claims longest first
CONTROLS = {
    "0": ["0.png"],
    "1": ["1.png"],
    "2": ["2.jpg"],
    "3": ["3.png"],
    "4": ["4_0.png", "4_1.png"],
    "5": ["5_0.png", "5_1.png"],
    "1_x": ["1_x.png"],
}


def _paired(root: Path, controls: dict[str, list[str]] = CONTROLS) -> tuple[Path, Path]:
    targets, control = root / "targets", root / "controls"
    targets.mkdir(parents=True)
    control.mkdir(parents=True)
    for index, stem in enumerate(sorted(controls)):
        Image.new("RGB", (512, 512), (30 * index, 90, 40)).save(targets / f"{stem}.png")
        (targets / f"{stem}.txt").write_text(f"myaku, edit {stem}\n")
        for n, name in enumerate(controls[stem]):
            Image.new("RGB", (512, 512), (30 * index, n * 60, 200)).save(control / name)
    return targets, control


def _add_paired(ws: Workspace, tmp_path: Path, name: str = "edits") -> None:
    targets, control = _paired(tmp_path / "incoming-pairs")
    add_dataset(ws, name, targets, control=control, resolution=(512, 512))
    set_dataset_values(
        ws,
        name,
        [
            "intent.task=paired-edit",
            "intent.trigger=myaku",
            "intent.pair_direction=control-to-target",
        ],
    )


def _paired_run(ws: Workspace) -> str:
    from datetime import datetime

    from kura.runs.new import create_run

    return create_run(
        ws,
        datasets=["edits"],
        base="zimage-base",
        backend="toy-trainer",
        sets=[
            "execution.executor=host",
            "training.epochs=",
            "training.max_steps=4",
            "datasets=[{name: edits, resolution: [512, 512], control_resolution: [768, 768]}]",
        ],
        now=datetime(2026, 12, 1, 9, 30),
    ).run_id


def _json(*argv: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    out = io.StringIO()
    code = main(["--json", *argv], stdout=out)
    return code, json.loads(out.getvalue())


def test_paired_data_is_carved_pair_by_pair_and_trials_train_on_the_training_part(
    ws: Workspace, tmp_path: Path
) -> None:
    _add_paired(ws, tmp_path)
    run = _paired_run(ws)
    created = new_sweep(ws, base_run=run, space=write_space(tmp_path, SPACE), trials=1)
    sweep_id = created["sweep"]
    split = created["split"]
    held = split["held_out"]["edits"]
    assert len(held) == 3  # ceil(7 × 0.3)
    root = sweep_dir(ws, sweep_id) / "split"
    parts = {part: root / f"edits-{part}" for part in ("val", "train")}
    controls = {part: root / f"edits-{part}.control" for part in ("val", "train")}
    originals = ws.dataset_dir("edits")
    seen_targets: set[str] = set()
    for part in ("val", "train"):
        targets = {p.stem for p in parts[part].glob("*.png")}
        assert not targets & seen_targets  # never in both parts
        seen_targets |= targets
        # every target's captions and all of its controls are in the same part, and only they
        assert {p.stem for p in parts[part].glob("*.txt")} == targets
        expected = sorted(c for stem in targets for c in CONTROLS[stem])
        assert sorted(p.name for p in controls[part].iterdir()) == expected
        # hard links: the split costs no space
        for path in [*parts[part].iterdir(), *controls[part].iterdir()]:
            source = originals / ("control" if path.parent == controls[part] else "media")
            assert path.stat().st_ino == (source / path.name).stat().st_ino
    assert seen_targets == set(CONTROLS)
    assert {p.removesuffix(".png") for p in held} == {p.stem for p in parts["val"].glob("*.png")}
    assert sorted(split["held_out_controls"]["edits"]) == sorted(
        c for p in held for c in CONTROLS[p.removesuffix(".png")]
    )

    # both parts are ordinary paired datasets with the base dataset's settings
    base = read_dataset(ws, "edits")
    for part in ("val", "train"):
        name = split["validation" if part == "val" else "train"]["edits"]
        spec = read_dataset(ws, name)
        assert spec.control == str(controls[part]) and spec.media == str(parts[part])
        assert spec.intent == base.intent and spec.caption_ext == base.caption_ext
        assert spec.facts is not None and base.facts is not None
        assert spec.facts.resolution == base.facts.resolution
        code, checked = _json("-w", str(ws.root), "dataset", "validate", name)
        assert code == 0 and checked["ok"], checked
        # the digest (which the lock records) covers both sides of every pair
        covered = validate_dataset(ws, name).files
        assert {k for k in covered if k.startswith("control/")} == {
            f"control/{p.name}" for p in controls[part].iterdir()
        }
        assert {k for k in covered if not k.startswith("control/")} == {
            p.name for p in parts[part].iterdir()
        }
        pairs = load_inspection(ws, name).pairs or {}
        assert pairs["with_controls"] == len(list(parts[part].glob("*.png")))
        assert not pairs["missing"] and not pairs["orphans"]

    # what every backend's compile receives: the split's control folder, mounted as its own
    from kura.dataset.registry import read_dataset_snapshot
    from kura.runs.compile import _dataset_input
    from kura.runs.layout import PathMap

    for part, key in (("train", "train"), ("val", "validation")):
        name = split[key]["edits"]
        paths = PathMap(in_container=True)
        source = _dataset_input(ws, read_dataset_snapshot(ws, name), paths)
        assert source.control_dir == f"/kura/data/{name}.control"
        assert paths.pairs[str(controls[part])] == source.control_dir
        assert paths.pairs[str(parts[part])] == source.media_dir
        host = _dataset_input(ws, read_dataset_snapshot(ws, name), PathMap(in_container=False))
        assert (host.media_dir, host.control_dir) == (str(parts[part]), str(controls[part]))

    plan_sweep(ws, sweep_id, gpu="h100-pcie")
    approve_sweep(ws, sweep_id)
    run_worker(ws, sweep_id, gpu="h100-pcie", seed=1)
    (record,) = load_trials(ws, sweep_id)
    assert record.status == "complete", record.reason
    trial = ws.run_dir(record.run_id)
    compiled = json.loads((trial / "compiled" / "toy.json").read_text())
    cache = json.loads((trial / "compiled" / "toy-cache.json").read_text())
    assert cache["datasets"] == [str(parts["train"])]
    assert compiled["controls"] == [str(controls["train"])]
    assert compiled["validation"] == [str(parts["val"])]
    assert compiled["validation_controls"] == [str(controls["val"])]
    # the lock covers both sides of both parts; the run.yaml keeps the base run's control use
    lock = json.loads((trial / "compiled" / "run.lock").read_text())
    locked = {d["name"]: d for d in lock["datasets"]}
    for part, key in (("train", "train"), ("val", "validation")):
        name = split[key]["edits"]
        assert locked[name]["control"] == str(controls[part].resolve())
        facts = read_dataset(ws, name).facts
        assert facts is not None and locked[name]["digest"] == facts.digest
    assert "edits" not in locked
    from kura.runs.store import load_run

    spec, _ = load_run(ws, record.run_id)
    assert [u.control_resolution for u in (*spec.datasets, *spec.validation)] == [[768, 768]] * 2


@pytest.mark.parametrize(
    ("controls", "named"),
    [
        ({**CONTROLS, "3": []}, ["3.png (no control image)"]),
        (
            {**CONTROLS, "3": ["3.png", "3_a.png"]},
            ["3.png (control(s) 3_a.png do not end in _<number>)"],
        ),
        ({**CONTROLS, "extra": []}, ["extra.png (no control image)"]),
    ],
)
def test_incomplete_pairs_are_refused_naming_the_files(
    ws: Workspace, tmp_path: Path, controls: dict[str, list[str]], named: list[str]
) -> None:
    targets, control = _paired(tmp_path / "incoming-pairs", controls)
    add_dataset(ws, "edits", targets, control=control, resolution=(512, 512))
    before = sorted(p.name for p in ws.datasets_dir.iterdir())
    run = _paired_run(ws)
    with pytest.raises(CheckFailed, match="not in complete pairs") as caught:
        new_sweep(ws, base_run=run, space=write_space(tmp_path, SPACE), trials=1)
    for text in named:
        assert text in caught.value.message
    assert "kura dataset validate edits" in caught.value.hint
    assert sorted(p.name for p in ws.datasets_dir.iterdir()) == before
    assert not list((ws.root / "sweeps").glob("*/sweep.json"))


def test_an_orphan_control_is_refused(ws: Workspace, tmp_path: Path) -> None:
    targets, control = _paired(tmp_path / "incoming-pairs")
    Image.new("RGB", (64, 64)).save(control / "zz.png")
    add_dataset(ws, "edits", targets, control=control, resolution=(512, 512))
    with pytest.raises(CheckFailed, match=r"control/zz\.png \(pairs with no target\)"):
        carve_split(ws, "sw-x", tmp_path / "sw-x", ["edits"], 0.3)


def test_a_video_dataset_loses_no_clip_caption_or_frame_fact(ws: Workspace, tmp_path: Path) -> None:
    clips = Builder(tmp_path / "clips")
    for index, frames in enumerate((9, 13, 17, 21)):
        clips.video(f"clip{index}.mp4", frames, fps=8 + index, caption=f"myaku clip {index}")
    add_dataset(ws, "clips", clips.root, resolution=(64, 48))
    set_dataset_values(ws, "clips", ["intent.task=video", 'intent.trigger="123"'])
    split = carve_split(ws, "sw-v", tmp_path / "sw-v", ["clips"], 0.25)
    base = load_inspection(ws, "clips")
    rows = {r["path"]: (r.get("frames"), r.get("fps")) for r in base.videos}
    assert sorted(frames for frames, _ in rows.values()) == [9, 13, 17, 21]  # type: ignore[type-var]
    carved: dict[str, tuple[object, object]] = {}
    for name in (split.train["clips"], split.validation["clips"]):
        report = load_inspection(ws, name)
        carved |= {r["path"]: (r.get("frames"), r.get("fps")) for r in report.videos}
        spec = read_dataset(ws, name)
        assert spec.intent.trigger == "123" and spec.intent.task == "video"
        media = Path(spec.media)
        for clip in media.glob("*.mp4"):
            assert (media / f"{clip.stem}.txt").read_text() == (
                clips.root / f"{clip.stem}.txt"
            ).read_text()
    assert carved == rows
    assert (
        split.held_out["clips"] == [p for p in split.held_out["clips"] if p.endswith(".mp4")]
        and len(split.held_out["clips"]) == 1
    )


def test_videos_with_a_control_folder_are_not_carved_blind(ws: Workspace, tmp_path: Path) -> None:
    clips = Builder(tmp_path / "clips")
    for index in range(3):
        clips.video(f"clip{index}.mp4", 9)
    controls = Builder(tmp_path / "clip-controls")
    for index in range(3):
        controls.image(f"clip{index}.png", caption=None)
    add_dataset(ws, "clips", clips.root, control=controls.root, resolution=(64, 48))
    with pytest.raises(Unsupported, match="cannot tell which controls go with which video"):
        carve_split(ws, "sw-v", tmp_path / "sw-v", ["clips"], 0.3)
