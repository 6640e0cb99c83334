"""A sample's control image is an input of the approved AI-Toolkit run (issue 22 item 4).

``--ctrl_img PATH`` in a prompt (AI-Toolkit's own flag, ``toolkit/config_modules.py:1452``)
becomes the sample's ``ctrl_img``: in a container the image is mounted read-only and the job
names the container's path; run.lock records its digest for the launch gate.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from PIL import Image
from tests.builders import character_workspace

from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return character_workspace(tmp_path)


def test_a_control_image_is_mounted_named_by_its_container_path_and_locked(
    ws: Workspace, tmp_path: Path
) -> None:
    picture = tmp_path / "refs" / "start.png"
    picture.parent.mkdir()
    Image.new("RGB", (64, 48), (10, 20, 30)).save(picture)
    prompts = json.dumps([f"myaku at night --ctrl_img {picture}"])
    run_id = create_run(
        ws,
        datasets=["myaku"],
        base="aitk-flux2-klein-base-4b",
        sets=[f"training.sample_prompts={prompts}", "training.sample_every_n_epochs=2"],
        now=datetime(2026, 12, 2, 9, 0),
    ).run_id
    plan_run(ws, run_id, gpu="h200")
    compiled = ws.run_dir(run_id) / "compiled"
    job = yaml.safe_load((compiled / "aitk-job.yaml").read_text())
    assert job["config"]["process"][0]["sample"]["samples"] == [
        {"prompt": "myaku at night", "ctrl_img": "/kura/sample-inputs/00-start.png"}
    ]
    mounts = json.loads((compiled / "container.json").read_text())["mounts"]
    mount = next(m for m in mounts if m["target"] == "/kura/sample-inputs/00-start.png")
    assert (mount["source"], mount["read_only"]) == (str(picture), True)
    locked = json.loads((compiled / "run.lock").read_text())["inputs"]
    assert [(i["path"], i["size"]) for i in locked] == [(str(picture), picture.stat().st_size)]
