"""`kura sweep …` on the command line, and Optuna never loaded at CLI start-up."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from kura.cli.main import main
from kura.workspace import Workspace
from tests.sweep.conftest import base_run, write_space


def _json(*argv: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    out = io.StringIO()
    code = main(["--json", *argv], stdout=out)
    return code, json.loads(out.getvalue())


def _commands(doc: dict) -> list[str]:  # type: ignore[type-arg]
    return [step["command"] for step in doc["next"]]


def test_the_cli_does_not_import_optuna_at_start_up() -> None:
    probe = (
        "import sys; from kura.cli.main import main; main(['sweep', '--help']); "
        "print('optuna' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_sweep_commands_end_to_end(ws: Workspace, tmp_path: Path) -> None:
    run = base_run(ws)
    root = str(ws.root)
    space = str(write_space(tmp_path))
    code, created = _json(
        "-w", root, "sweep", "new", "--from", run, "--space", space, "--trials", "2"
    )
    assert code == 0 and created["kind"] == "sweep"
    sweep_id = created["id"]
    code, error = _json("-w", root, "sweep", "worker", sweep_id, "--gpu", "h100-pcie")
    assert code == 1 and "not approved" in error["error"]["message"]
    code, plan = _json("-w", root, "sweep", "plan", sweep_id, "--gpu", "h100-pcie")
    assert code == 0 and _commands(plan) == [f"kura sweep approve {sweep_id}"]
    code, approval = _json("-w", root, "sweep", "approve", sweep_id)
    assert code == 0 and _commands(approval) == [f"kura sweep worker {sweep_id}"]
    code, worker = _json(
        "-w", root, "sweep", "worker", sweep_id, "--gpu", "h100-pcie", "--seed", "5"
    )
    assert code == 0 and len(worker["trials"]) == 2, worker
    assert _commands(worker) == [f"kura sweep status {sweep_id}", f"kura sweep report {sweep_id}"]
    code, status = _json("-w", root, "sweep", "status", sweep_id)
    assert code == 0 and len(status["rows"]) == 2
    assert _commands(status) == [f"kura sweep report {sweep_id}"]  # both trials are done
    code, report = _json("-w", root, "sweep", "report", sweep_id)
    assert code == 0 and report["best"] is not None
    assert _commands(report)[0] == f"kura sweep promote {sweep_id}"
    code, missing = _json("-w", root, "sweep", "status", "sw-nope")
    assert code == 6 and "kura sweep new" in missing["error"]["hint"]
