"""A workspace whose runs launch with SkyPilot against a recording `sky` on PATH (shared by
the launch and collect tests)."""

from __future__ import annotations

import stat
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from kura.execution.executors.skypilot import manifest_command
from kura.models.bundles import get_bundle
from kura.models.standins import install_bundle_in_hub_cache
from kura.runs.approval import approve_run
from kura.runs.launching import launch_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from tests.runs.fake_checkout import prepend_path

__all__ = [
    "BUNDLE",
    "FAKE_AWS",
    "LORA",
    "SKYPILOT_TOML",
    "job_writes",
    "launched_sky_run",
    "new_sky_run",
    "sky_ws",
]

BUNDLE = "flux2-klein-base-4b"

FAKE_SKY = """#!{python}
import json, os, sys
with open({record!r}, "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["jobs", "queue"]:  # SkyPilot's answer, as the test recorded it
    queue = {queue!r}
    print(open(queue).read() if os.path.exists(queue) else "[]")
else:
    print("Managed job submitted (id: 7).")
"""
"""A recording `sky`: each call's argv a line of ``sky.jsonl``; ``sky jobs queue`` prints
``sky-queue.json`` (what a test says SkyPilot reports), a launch SkyPilot's submit line."""

SKYPILOT_TOML = """
[skypilot]
bucket = "s3://kura-test-bucket/runs"
cloud = "aws"
region = "us-east-1"
use_spot = true
disk_size_gb = 200
"""


@pytest.fixture
def sky_ws(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    install_bundle_in_hub_cache(get_bundle(BUNDLE), cache)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sky = bin_dir / "sky"
    sky.write_text(
        FAKE_SKY.format(
            python=sys.executable,
            record=str(tmp_path / "sky.jsonl"),
            queue=str(tmp_path / "sky-queue.json"),
        )
    )
    sky.chmod(sky.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", prepend_path(bin_dir))
    return ws


def new_sky_run(ws: Workspace, *sets: str) -> str:
    return create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=skypilot", *sets],
        now=datetime(2026, 12, 2, 1, 0),
    ).run_id


LORA = b"\x08\x00\x00\x00\x00\x00\x00\x00{}      " + b"\x01" * 64

FAKE_AWS = """#!{python}
import json, shutil, sys
with open({record!r}, "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
_, _, url, dest = sys.argv[1:5]
path = url.partition("://")[2].partition("/")[2]
shutil.copytree({root!r} + "/" + path, dest, dirs_exist_ok=True)
"""


def launched_sky_run(ws: Workspace) -> str:
    with ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)  # bucket s3://kura-test-bucket/runs
    run_id = new_sky_run(ws)
    plan_run(ws, run_id, gpu="h100-sxm")
    approve_run(ws, run_id)
    launch_run(ws, run_id, detach=False)
    return run_id


def job_writes(bucket: Path, run_id: str) -> Path:
    """What the job leaves in the bucket: its files, then the manifest of each folder."""
    prefix = bucket / "runs" / run_id
    files = {
        "output/lora.safetensors": LORA,
        "output/sample/step000004_00.png": b"\x89PNG fake",
        "logs/train/events.out.tfevents.1.host": b"tfevents",
        "logs/trainer.log": b"epoch 2/2\n",
        "cache/latent_0000.safetensors": b"latent",
    }
    for name, data in files.items():
        (prefix / name).parent.mkdir(parents=True, exist_ok=True)
        (prefix / name).write_bytes(data)
    for folder in ("output", "logs", "cache"):
        subprocess.run(["bash", "-c", manifest_command(str(prefix / folder))], check=True)
    return prefix
