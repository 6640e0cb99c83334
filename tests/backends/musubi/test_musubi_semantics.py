"""Musubi's own dataset code on every golden dataset TOML, against what Kura's plan says.

Runs with Musubi's environment when it is installed (``conftest.musubi_harness``; CI runs
it on every change). Otherwise opt-in (``KURA_MUSUBI_SRC`` = a Musubi Tuner v0.3.4
checkout's ``src``; its dataset code
needs ``torch``, ``numpy``, ``Pillow``, ``av``, ``cv2``, ``safetensors``, ``toml`` and
``voluptuous``, the last three and ``cv2`` may live in ``KURA_MUSUBI_DEPS``)::

    git clone --branch v0.3.4 https://github.com/kohya-ss/musubi-tuner /tmp/musubi
    pip install --target /tmp/musubi-deps voluptuous==0.15.2 toml==0.10.2 \\
        opencv-python-headless
    KURA_MUSUBI_SRC=/tmp/musubi/src KURA_MUSUBI_DEPS=/tmp/musubi-deps \\
        .venv/bin/pytest tests/backends/musubi/test_musubi_semantics.py

For every golden case the media of ``musubi_semantics.media_for`` is written to disk, the
golden ``dataset.toml`` is pointed at it, and ``musubi_semantics_harness.py`` runs Musubi's
config_utils, its image/video datasets, FramePack's own section writer and its
training-time bucketing on it. Items and batches per epoch, frames per item (frame
extraction after the ``source_fps`` conversion), control images per item and image buckets
must be what Kura's inspection, compile and plan say. ``KURA_RECORD_SEMANTICS=1`` also
writes Musubi's numbers to ``semantics/datasets/<case>.json``; without Musubi,
``test_plan_matches_recorded_musubi_semantics`` pins Kura's plan to those records.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from musubi_cases import CASES, Case
from musubi_semantics import (
    GOLDEN_TOML_ROOTS,
    TOO_SHORT_FOR_FRAMEPACK,
    kura_semantics,
    materialise,
    musubi_semantics,
)
from musubi_trainer_env import Harness

from kura.errors import SpecError

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
RECORDS = HERE / "semantics" / "datasets"
RECORD = os.environ.get("KURA_RECORD_SEMANTICS") == "1"

_COMPARED = (
    "kind",
    "items",
    "train_items",
    "batches",
    "controls",
    "buckets",
    "frames",
    "encoded",
)


def _golden(case: Case) -> tuple[str, dict[str, Any]]:
    folder = GOLDEN / case.name
    toml = (folder / "dataset.toml").read_text(encoding="utf-8")
    return toml, json.loads((folder / "compiled.json").read_text(encoding="utf-8"))


def _argv(compiled: dict[str, Any], kind: str) -> list[str]:
    return next(step["argv"] for step in compiled["steps"] if step["kind"] == kind)


def _local_toml(toml: str, root: Path) -> str:
    for prefix in GOLDEN_TOML_ROOTS:
        toml = toml.replace(f'"{prefix}', f'"{root}{prefix}')
    return toml


def mismatches(kura: dict[str, Any], musubi: dict[str, Any]) -> list[str]:
    """Every number where Kura's plan and Musubi's dataset code differ."""
    found: list[str] = []
    if not kura["toml_is_golden"]:
        found.append("Kura's compile with this media does not write the golden dataset.toml")
    if len(kura["datasets"]) != len(musubi["datasets"]):
        return [*found, f"{len(kura['datasets'])} datasets in Kura, {len(musubi['datasets'])}"]
    for index, (ours, theirs) in enumerate(zip(kura["datasets"], musubi["datasets"], strict=False)):
        for key in _COMPARED:
            if (key in ours or key in theirs) and ours.get(key) != theirs.get(key):
                found.append(
                    f"dataset {index} {key}: Kura {ours.get(key)!r}, Musubi {theirs.get(key)!r}"
                )
        if "control_load" in theirs:
            # Control pixels per item in target buckets: the plan's reference images must
            # cover Musubi's (within the bucket rounding), unless compile warned it cannot.
            warned = any("no_resize_control without" in w for w in kura["warnings"])
            if not warned and theirs["control_load"] > ours.get("control_load", 0) * 1.02:
                found.append(
                    f"dataset {index}: controls cost {theirs['control_load']} target buckets "
                    f"in Musubi, the plan {ours.get('control_load')}"
                )
        if theirs.get("cache_errors"):
            found.append(f"dataset {index}: Musubi's caching fails: {theirs['cache_errors']}")
    for key in ("batches_per_epoch", "steps_per_epoch"):
        if kura[key] != musubi[key]:
            found.append(f"{key}: Kura {kura[key]}, Musubi {musubi[key]}")
    if kura["steps_per_epoch_by_argv"] != kura["steps_per_epoch"]:
        found.append(
            f"steps per epoch: the plan says {kura['steps_per_epoch']}, the compiled argv "
            f"makes Musubi count {kura['steps_per_epoch_by_argv']}"
        )
    return found


@pytest.fixture(scope="module")
def media_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("semantics")
    for case in CASES:
        materialise(case, root / case.name)
    return root


def _run_musubi(harness: Harness, root: Path, cases: list[Case]) -> dict[str, Any]:
    """The harness's reports of ``cases`` whose media lies under ``root/<case>``."""
    manifest: dict[str, Any] = {}
    for case in cases:
        toml, compiled = _golden(case)
        local = root / case.name / "dataset.toml"
        local.write_text(_local_toml(toml, root / case.name), encoding="utf-8")
        manifest[case.name] = {"toml": str(local), "argv": _argv(compiled, "cache")}
    manifest_path = root / "manifest.json"
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    completed = subprocess.run(
        [
            harness.python,
            str(HERE / "musubi_semantics_harness.py"),
            harness.source,
            str(manifest_path),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=harness.env,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return dict(json.loads(completed.stdout))


def test_musubi_dataset_code_agrees_with_the_plan(
    musubi_harness: Harness, media_root: Path
) -> None:
    reports = _run_musubi(musubi_harness, media_root, list(CASES))
    failures: dict[str, Any] = {}
    for case in CASES:
        report = reports[case.name]
        if "error" in report:
            failures[case.name] = report["trace"][-1200:]
            continue
        toml, compiled = _golden(case)
        theirs = musubi_semantics(report, _argv(compiled, "train"))
        if RECORD:
            RECORDS.mkdir(parents=True, exist_ok=True)
            record = {"case": case.name, "musubi_release": compiled["release"], **theirs}
            (RECORDS / f"{case.name}.json").write_text(
                json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8"
            )
        ours = kura_semantics(case, media_root / case.name, toml)
        found = mismatches(ours, theirs)
        if found:
            failures[case.name] = found
    assert not failures, json.dumps(failures, indent=1)


def test_a_clip_kura_refuses_for_framepack_fails_musubi_caching(
    musubi_harness: Harness, tmp_path: Path
) -> None:
    case = next(c for c in CASES if c.name == "framepack-video-plain")
    materialise(case, tmp_path / case.name, TOO_SHORT_FOR_FRAMEPACK)
    toml, _ = _golden(case)
    with pytest.raises(SpecError, match="c09"):
        kura_semantics(case, tmp_path / case.name, toml)
    report = _run_musubi(musubi_harness, tmp_path, [case])[case.name]
    assert "error" not in report, report
    errors = report["datasets"][0]["cache_errors"]
    assert len(errors) == 1 and "Not enough frames for FramePack" in errors[0], errors


def test_a_dataset_kura_refuses_for_no_item_gives_musubi_no_item(
    musubi_harness: Harness, tmp_path: Path
) -> None:
    """Issue 23 item 8: clips that reach no target frame count at the model's fps train
    nothing in Musubi (it skips them silently); Kura refuses the run naming the cause."""
    from dataclasses import replace

    base = next(c for c in CASES if c.name == "wan-t2v-14B-video-plain")
    case = replace(
        base, spec_datasets=[{"name": "clips", "resolution": [960, 544], "frames": [81]}]
    )
    materialise(case, tmp_path / case.name)
    toml, compiled = _golden(base)
    toml = toml.replace(
        "target_frames = [\n    1,\n    25,\n    45,\n]", "target_frames = [\n    81,\n]"
    )
    assert "81" in toml
    with pytest.raises(SpecError, match="no training item"):
        kura_semantics(case, tmp_path / case.name, toml)
    local = tmp_path / case.name / "dataset.toml"
    local.write_text(_local_toml(toml, tmp_path / case.name), encoding="utf-8")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        json.dumps({case.name: {"toml": str(local), "argv": _argv(compiled, "cache")}})
    )
    h = musubi_harness
    completed = subprocess.run(
        [h.python, str(HERE / "musubi_semantics_harness.py"), h.source, str(manifest)],
        capture_output=True,
        text=True,
        timeout=1800,
        env=h.env,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    report = json.loads(completed.stdout)[case.name]
    assert "error" not in report, report
    assert [d["train_items"] for d in report["datasets"]] == [0]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_plan_matches_recorded_musubi_semantics(case: Case, media_root: Path) -> None:
    path = RECORDS / f"{case.name}.json"
    assert path.is_file(), (
        f"no recorded Musubi semantics for {case.name}; run the opt-in test with "
        "KURA_MUSUBI_SRC and KURA_RECORD_SEMANTICS=1"
    )
    theirs = json.loads(path.read_text(encoding="utf-8"))
    toml, _ = _golden(case)
    found = mismatches(kura_semantics(case, media_root / case.name, toml), theirs)
    assert not found, found


def test_every_case_has_a_record() -> None:
    recorded = {p.stem for p in RECORDS.glob("*.json")}
    assert recorded == {case.name for case in CASES}
