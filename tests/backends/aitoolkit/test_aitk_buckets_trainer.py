"""Kura's AI-Toolkit buckets and batches per epoch against AI-Toolkit's own data loader.

``aitk_buckets_harness.py`` runs with the AI-Toolkit environment's Python (``KURA_AITK_ENV``)
over the checkout ``KURA_AITK_SRC``, in one process for every case: it writes folders of
small Pillow images of mixed sizes and builds ``get_dataloader_from_datasets`` over them
with the model class's own bucket step. Skipped without both (failing under ``CI=true``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.backends.trainer_required import missing

from kura.backends.aitoolkit.buckets import dataset_buckets, divisibility_for

HERE = Path(__file__).parent

CASES: list[dict[str, Any]] = [
    {
        "name": "qwen-mixed-sizes",
        "arch": "qwen_image",
        "sizes": [[640, 480, 3], [512, 768, 2], [1024, 1024, 1], [300, 200, 5]],
        "resolution": [512],
        "batch_size": 2,
        "repeats": 1,
    },
    {
        "name": "wan22-two-resolutions-repeats",
        "arch": "wan22_14b",
        "sizes": [[640, 480, 3], [1280, 720, 2], [333, 517, 1]],
        "resolution": [512, 768],
        "batch_size": 3,
        "repeats": 2,
    },
    {
        "name": "sdxl-under-the-cap",
        "arch": "sdxl",
        "sizes": [[832, 1216, 3], [1024, 1024, 2], [640, 480, 4], [650, 470, 1]],
        "resolution": [1024],
        "batch_size": 4,
        "repeats": 1,
    },
    {
        "name": "wan22-5b-one-per-batch",
        "arch": "wan22_5b",
        "sizes": [[700, 500, 3], [500, 700, 2]],
        "resolution": [768],
        "batch_size": 1,
        "repeats": 3,
    },
]


@pytest.fixture(scope="module")
def trainer_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    src, env = os.environ.get("KURA_AITK_SRC"), os.environ.get("KURA_AITK_ENV")
    python = Path(env or "/nonexistent") / "bin" / "python"
    if not src or not python.is_file():
        missing("set KURA_AITK_SRC and KURA_AITK_ENV to run AI-Toolkit's own data loader")
    root = tmp_path_factory.mktemp("aitk-buckets")
    cases = root / "cases.json"
    cases.write_text(json.dumps({"root": str(root / "data"), "cases": CASES}))
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environ["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [str(python), str(HERE / "aitk_buckets_harness.py"), str(src), str(cases)],
        capture_output=True,
        text=True,
        timeout=600,
        env=environ,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("KURA-REPORT "))
    report: dict[str, Any] = json.loads(line[len("KURA-REPORT ") :])
    return report


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_buckets_and_batches_match_the_trainer(
    case: dict[str, Any], trainer_report: dict[str, Any]
) -> None:
    theirs = trainer_report[case["name"]]
    assert theirs["divisibility"] == divisibility_for(case["arch"])
    ours = dataset_buckets(
        [tuple(s) for s in case["sizes"]],  # type: ignore[misc]
        case["resolution"],
        divisibility=divisibility_for(case["arch"]),
        batch_size=case["batch_size"],
        repeats=case["repeats"],
    )
    assert [d["resolution"] for d in theirs["datasets"]] == [p.resolution for p in ours]
    for dataset, part in zip(theirs["datasets"], ours, strict=True):
        assert dataset["buckets"] == {f"{b.width}x{b.height}": b.items for b in part.buckets}
        assert dataset["batches"] == part.batches
        assert dataset["padded"]  # every batch holds batch_size items
    assert theirs["loader_batches"] == sum(p.batches for p in ours)


def test_the_stand_in_model_answered_only_feature_flags(trainer_report: dict[str, Any]) -> None:
    assert set(trainer_report["_stand_in_flags"]) <= {
        "encode_first_frame_in_text_embeddings",
        "is_audio_model",
        "use_raw_control_images",
    }
