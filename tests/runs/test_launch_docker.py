"""Launch through the docker executor, against a fake `docker` on PATH that records its argv."""

from __future__ import annotations

import json
import stat
from datetime import datetime
from pathlib import Path

import pytest

from kura.errors import CheckFailed
from kura.models.bundles import get_bundle
from kura.models.standins import install_bundle_in_hub_cache
from kura.runs.approval import approve_run
from kura.runs.launching import launch_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from tests.runs.fake_checkout import prepend_path

BUNDLE = "flux2-klein-base-4b"

FAKE_DOCKER = """#!/bin/sh
echo "$@" >> "{log}"
case "$1" in
  image) echo '{{"org.kura.musubi-release": "{release}"}}' ;;
  run) echo "steps: 100%|##########| 4/4 [00:04<00:00, 1.00s/it, avr_loss=0.1]" ;;
  *) ;;
esac
"""


def _docker(folder: Path, log: Path, release: str) -> None:
    folder.mkdir(exist_ok=True)
    script = folder / "docker"
    script.write_text(FAKE_DOCKER.format(log=log, release=release))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def docker_ws(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    install_bundle_in_hub_cache(get_bundle(BUNDLE), cache)
    monkeypatch.setenv("PATH", prepend_path(tmp_path / "bin"))
    return ws


def _approved(ws: Workspace) -> str:
    run_id = create_run(
        ws, datasets=["myaku"], base=BUNDLE, now=datetime(2026, 11, 30, 6, 0)
    ).run_id
    plan_run(ws, run_id, gpu="rtx-4090")
    approve_run(ws, run_id)
    return run_id


def test_docker_launch_mounts_data_read_only_and_runs_each_step(
    docker_ws: Workspace, tmp_path: Path
) -> None:
    log = tmp_path / "docker.log"
    _docker(tmp_path / "bin", log, "0.3.4")
    run_id = _approved(docker_ws)
    state = launch_run(docker_ws, run_id, detach=False).state
    assert state.status == "succeeded", state
    calls = [line.split() for line in log.read_text().splitlines()]
    runs = [c for c in calls if c[0] == "run"]
    assert len(runs) == 3
    train = runs[-1]
    media = str(docker_ws.dataset_dir("myaku") / "media")
    assert f"{media}:/kura/data/myaku:ro" in train
    assert f"{docker_ws.run_dir(run_id) / 'output'}:/kura/run/output:rw" in train
    assert "kura/musubi-tuner:0.3.4" in train
    assert "accelerate" in train
    compiled = json.loads((docker_ws.run_dir(run_id) / "compiled" / "container.json").read_text())
    assert all(m["source"] for m in compiled["mounts"] if not m["baked"])


def test_docker_launch_refuses_an_image_of_another_release(
    docker_ws: Workspace, tmp_path: Path
) -> None:
    log = tmp_path / "docker.log"
    _docker(tmp_path / "bin", log, "0.3.1")
    run_id = _approved(docker_ws)
    with pytest.raises(CheckFailed, match=r"holds Musubi Tuner 0\.3\.1"):
        launch_run(docker_ws, run_id, detach=False)
    assert not any(line.startswith("run ") for line in log.read_text().splitlines())
