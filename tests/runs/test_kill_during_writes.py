"""A `kura run new|plan|approve` killed at any write leaves a usable workspace: listing
works, the command runs again, and no half-written result is taken for a whole one."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kura.cli.main import main
from kura.workspace import Workspace
from tests.builders import character_workspace

KILL_AT = """
import os, shutil, sys
import kura.fsutil
from kura.cli.main import main

limit, calls = int(sys.argv[1]), [0]

def dying(real):
    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] == limit:
            os._exit(9)
        return real(*args, **kwargs)
    return wrapper

os.rename = dying(os.rename)
os.replace = dying(os.replace)
sys.exit(main(sys.argv[2:]))
"""


def _kura(ws: Workspace, *argv: str) -> tuple[int, dict]:
    out = io.StringIO()
    code = main(["--json", "-w", str(ws.root), *argv], stdout=out)
    text = out.getvalue().strip()
    return code, json.loads(text) if text else {}


def _killed(ws: Workspace, point: int, *argv: str) -> int:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", KILL_AT, str(point), "--json", "-w", str(ws.root), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 9), done.stderr[-2000:]
    return done.returncode


@pytest.mark.slow
def test_a_kill_at_any_write_of_run_new_plan_and_approve_leaves_a_usable_workspace(
    tmp_path: Path,
) -> None:
    ws = character_workspace(tmp_path)
    new = ("run", "new", "--dataset", "myaku", "--base", "flux2-klein-base-4b")
    kills = 0
    for point in range(1, 8):
        if _killed(ws, point, *new) == 0:
            break
        kills += 1
        code, _ = _kura(ws, "run", "list")
        assert code == 0, f"run list fails after a kill at write {point} of run new"
    assert kills >= 1, "run new was never killed: the harness reached no write"
    code, created = _kura(ws, *new)
    assert code == 0
    run_id = created["run"]

    for command in (("run", "plan", run_id, "--gpu", "h100-pcie"), ("run", "approve", run_id)):
        kills = 0
        for point in range(1, 12):
            if _killed(ws, point, *command) == 0:
                break
            kills += 1
            assert _kura(ws, "run", "list")[0] == 0
            if command[1] == "approve":
                # a killed approval is no approval: launch refuses, naming the way back
                code, refused = _kura(ws, "run", "launch", run_id, "--foreground")
                assert code != 0 and "approve" in json.dumps(refused)
        assert kills >= 1, f"{command[1]} was never killed"
        assert _kura(ws, *command)[0] == 0, command
