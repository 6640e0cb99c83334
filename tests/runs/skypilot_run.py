"""A workspace whose runs launch with SkyPilot against a recording `sky` on PATH (shared by
the launch and collect tests)."""

from __future__ import annotations

import stat
import sys
from datetime import datetime
from pathlib import Path

import pytest

from kura.models.bundles import get_bundle
from kura.models.standins import install_bundle_in_hub_cache
from kura.runs.new import create_run
from kura.workspace import Workspace
from tests.runs.fake_checkout import prepend_path

__all__ = ["BUNDLE", "SKYPILOT_TOML", "new_sky_run", "sky_ws"]

BUNDLE = "flux2-klein-base-4b"

FAKE_SKY = """#!{python}
import json, sys
with open({record!r}, "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
print("Managed job submitted (id: 7).")
"""

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
    sky.write_text(FAKE_SKY.format(python=sys.executable, record=str(tmp_path / "sky.jsonl")))
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
