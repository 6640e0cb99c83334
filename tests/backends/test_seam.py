"""The seam holds: a second trainer (the toy, a test double) drives Kura's whole path, and
nothing above ``kura.backends`` knows Musubi."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest
from tests.builders import character_workspace

from kura.backends.registry import backend_names, get_backend, require_serves
from kura.errors import SpecError
from kura.models.bundles import get_bundle
from kura.runs.approval import approve_run
from kura.runs.evidence import evaluate_run
from kura.runs.following import run_status
from kura.runs.launching import launch_run, relaunch_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
TOY_DIR = REPO / "tests" / "backends" / "toy"
BUNDLE = "zimage-base"


@pytest.fixture
def toy_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    from kura.models.standins import install_bundle_in_hub_cache

    monkeypatch.setenv("KURA_BACKEND_MODULES", "toy-trainer=tests.backends.toy.backend")
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    install_bundle_in_hub_cache(get_bundle(BUNDLE), cache)
    (TOY_DIR / "mode").unlink(missing_ok=True)
    yield character_workspace(tmp_path)
    (TOY_DIR / "mode").unlink(missing_ok=True)


def _new(ws: Workspace) -> str:
    return create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        backend="toy-trainer",
        sets=["execution.executor=host"],
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id


def test_the_toy_trainer_walks_the_whole_path(toy_ws: Workspace) -> None:
    run_id = _new(toy_ws)
    run_yaml = (toy_ws.run_dir(run_id) / "run.yaml").read_text()
    assert "name: toy-trainer" in run_yaml
    plan = plan_run(toy_ws, run_id, gpu="h100-pcie").to_dict()
    assert plan["fits"] is True
    assert plan["applied"] == {}
    assert [s["step"] for s in plan["estimate"]["steps"]] == ["prepare", "train"]
    assert plan["contingency"]["change"] == {"shrink_activations": True}
    steps = json.loads((toy_ws.run_dir(run_id) / "compiled" / "steps.json").read_text())
    assert steps["backend"] == "toy-trainer"
    assert [s["name"] for s in steps["steps"]] == ["prepare", "train"]
    approve_run(toy_ws, run_id)

    (TOY_DIR / "mode").write_text("oom")
    failed = launch_run(toy_ws, run_id, detach=False)
    assert failed.state.status == "failed"
    assert failed.diagnosis is not None and failed.diagnosis.code == "cuda_oom"
    assert failed.diagnosis.next == {"action": "enable", "key": "shrink_activations"}

    again = relaunch_run(toy_ws, run_id, detach=False).state
    assert again.status == "succeeded", again
    assert [s.status for s in again.steps] == ["skipped", "succeeded"]
    status = run_status(toy_ws, run_id)
    progress = status.progress
    assert progress is not None and (progress.step, progress.total) == (5, 5)
    # the loss comes from the backend's loss_history: attempt 1 ran out of memory before
    # its first step, so only attempt 2 has a line (from its own log, not Musubi's files)
    assert status.scalars == {"loss": (5, progress.loss)}
    from kura.execution.attempts import attempt_refs, run_attempts

    run_dir = toy_ws.run_dir(run_id)
    history = get_backend("toy-trainer").loss_history(run_dir, attempt_refs(run_attempts(run_dir)))
    assert [(a.attempt, len(a.points)) for a in history.attempts] == [(2, 5)]
    assert (toy_ws.run_dir(run_id) / "output" / "toy-lora.safetensors").is_file()
    evaluate_run(toy_ws, run_id, rating=4, notes="toy likeness fine")
    assert "toy likeness fine" in (toy_ws.run_dir(run_id) / "notes.md").read_text()

    # export goes through the run's backend (the CLI does not know the toy's layout)
    import io

    from kura.cli.main import main

    out = io.StringIO()
    assert main(["--json", "-w", str(toy_ws.root), "export", run_id], stdout=out) == 0
    exported = json.loads(out.getvalue())
    assert exported["kind"] == "lora-export"
    lora = toy_ws.run_dir(run_id) / "output" / "toy-lora.safetensors"
    assert Path(exported["out"]).read_bytes() == lora.read_bytes()


def test_the_ladder_walks_the_toys_own_aids(toy_ws: Workspace) -> None:
    run_id = _new(toy_ws)
    # 24 GiB class: batch 2 needs 22+1 GiB, over the usable 22.8; shrink alone fits.
    plan = plan_run(toy_ws, run_id, gpu="rtx-4090").to_dict()
    assert [r["aid"] for r in plan["fit"]["rungs"]] == ["shrink"]
    assert plan["applied"] == {"shrink_activations": {"from": None, "to": True}}
    # plan.md lists the aids by the backend's own keys (no trainer's names above the seam)
    text = (toy_ws.run_dir(run_id) / "plan.md").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("- Memory aids: ")]
    assert line.startswith("- Memory aids: shrink_activations=True (fit ladder")


def test_an_unknown_backend_lists_the_registered_ones(toy_ws: Workspace) -> None:
    with pytest.raises(SpecError, match="unknown backend 'no-such-trainer'") as caught:
        get_backend("no-such-trainer")
    assert "musubi-tuner" in (caught.value.hint or "")
    assert "toy-trainer" in backend_names()


def test_a_backend_never_swaps_for_another(toy_ws: Workspace) -> None:
    toy = get_backend("toy-trainer")
    with pytest.raises(SpecError, match="does not train flux2") as caught:
        require_serves(toy, "flux2")
    assert "musubi-tuner" in (caught.value.hint or "")
    with pytest.raises(SpecError, match="toy-trainer does not train"):
        create_run(toy_ws, datasets=["myaku"], base="flux2-klein-base-4b", backend="toy-trainer")


def test_model_bundles_lists_each_bundles_backends(toy_ws: Workspace) -> None:
    import io

    from kura.cli.main import main

    out = io.StringIO()
    assert main(["--json", "model", "bundles", "--arch", "zimage"], stdout=out) == 0
    bundles = json.loads(out.getvalue())["bundles"]
    # each bundle names only the backends that accept it: AI-Toolkit loads its own layout
    # (aitk-*), Musubi and the toy take Musubi's files
    by_id = {b["bundle"]: b["backends"] for b in bundles}
    assert by_id["zimage-base"] == ["musubi-tuner", "toy-trainer"]
    assert by_id["aitk-zimage-base"] == ["ai-toolkit"]
    assert {b["backend"] for b in bundles} == {"musubi-tuner", "ai-toolkit"}
