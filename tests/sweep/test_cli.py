"""`kura sweep …` on the command line, and Optuna never loaded at CLI start-up."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kura.cli.main import main
from kura.workspace import Workspace
from tests.cli.vocabulary import synonyms
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
    sweep_id = created["sweep"]
    code, error = _json("-w", root, "sweep", "worker", sweep_id, "--gpu", "h100-pcie")
    assert code == 9 and "not approved" in error["error"]["message"]  # a state conflict
    code, plan = _json("-w", root, "sweep", "plan", sweep_id, "--gpu", "h100-pcie")
    assert code == 0 and _commands(plan) == [f"kura sweep approve {sweep_id}"]
    code, approval = _json("-w", root, "sweep", "approve", sweep_id)
    # the worker on the GPU class the sweep was planned and priced for
    assert code == 0 and _commands(approval) == [f"kura sweep worker {sweep_id} --gpu h100-pcie"]
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
    # one vocabulary: the sweep is `sweep` in every document, as a run is `run`
    for document in (created, plan, approval, worker, status, report):
        assert synonyms(document) == [], document.get("kind")


def test_sweep_without_the_sweep_extra_says_to_install_it(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without Optuna every sweep command answers with the extra to install (exit 7, one
    JSON document), as `kura serve` does for the web extra; --help still works."""
    run = base_run(ws)
    space = str(write_space(tmp_path))
    for name in [m for m in sys.modules if m == "optuna" or m.startswith("optuna.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna → ModuleNotFoundError
    code, error = _json("-w", str(ws.root), "sweep", "new", "--from", run, "--space", space)
    assert code == 7, error
    assert "optuna" in error["error"]["message"]
    assert error["error"]["message"].startswith("`kura sweep new` needs optuna")
    assert "pip install 'kura[sweep]'" in error["error"]["hint"]
    code, error = _json("-w", str(ws.root), "sweep", "status", "sw-20261201-1200")
    assert code == 7 and "kura[sweep]" in error["error"]["hint"]
    assert main(["sweep", "new", "--help"], stdout=io.StringIO()) == 0
