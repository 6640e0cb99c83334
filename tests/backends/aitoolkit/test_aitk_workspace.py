"""The whole path with AI-Toolkit chosen in run.yaml: new → plan → approve → launch (the
fake run.py, from the checkout an AI-Toolkit environment's record names, started with that
environment's Python) → status, on the Chroma bundle (a family Musubi does not train), and
never a switch of backend."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from tests.backends.aitoolkit.fakes import fake_env
from tests.builders import character_workspace

from kura.errors import SpecError
from kura.models.bundles import get_bundle
from kura.runs.approval import approve_run
from kura.runs.following import run_status
from kura.runs.launching import launch_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace

FAKE_DIR = Path(__file__).with_name("fake_aitk")
BUNDLE = "chroma1-base"


@pytest.fixture
def aitk_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    from kura.models.standins import install_bundle_in_hub_cache

    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("KURA_AITK_ENV", str(fake_env(tmp_path / "aitk-env", FAKE_DIR)))
    install_bundle_in_hub_cache(get_bundle(BUNDLE), cache)
    ws = character_workspace(tmp_path)
    toml = ws.config_path.read_text()
    ws.config_path.write_text(
        toml + f'\n[executor]\naitk_checkout = "{FAKE_DIR}"\n'
        if "[executor]" not in toml
        else toml.replace("[executor]", f'[executor]\naitk_checkout = "{FAKE_DIR}"')
    )
    return ws


def _new(ws: Workspace) -> str:
    return create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=host", "training.max_steps=6"],
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id


def test_chroma_on_ai_toolkit_end_to_end(aitk_ws: Workspace) -> None:
    run_id = _new(aitk_ws)
    run_dir = aitk_ws.run_dir(run_id)
    document = yaml.safe_load((run_dir / "run.yaml").read_text())
    assert document["backend"]["name"] == "ai-toolkit"
    assert "proposed" in document["provenance"]["backend.name"]
    assert document["backend"]["config"]["gradient_checkpointing"] is False
    plan = plan_run(aitk_ws, run_id, gpu="rtx-4090").to_dict()
    assert plan["fits"] is True and plan["fit"]["sizeable"] is True  # Chroma is sized
    assert plan["applied"]["gradient_checkpointing"] == {"from": False, "to": True}
    assert plan["contingency"]["change"] == {"low_vram": True}
    text = (run_dir / "plan.md").read_text()
    assert "cannot say whether this run fits" not in text and "layer-offloading" not in text
    job = yaml.safe_load((run_dir / "compiled" / "aitk-job.yaml").read_text())
    assert job["config"]["process"][0]["model"]["arch"] == "chroma"
    assert approve_run(aitk_ws, run_id).accepted_risk is None
    state = launch_run(aitk_ws, run_id, detach=False).state
    assert state.status == "succeeded", state
    progress = run_status(aitk_ws, run_id).progress
    assert progress is not None and progress.step == progress.total == 6
    assert (run_dir / "output" / f"{run_id}.safetensors").is_file()
    steps = json.loads((run_dir / "compiled" / "steps.json").read_text())
    assert steps["backend"] == "ai-toolkit"
    env_python = str(Path(os.environ["KURA_AITK_ENV"]) / "bin" / "python")
    assert [s["argv"][0] for s in steps["steps"]] == [env_python, env_python]
    assert {s["cwd"] for s in steps["steps"]} == {str(FAKE_DIR.resolve())}
    assert f"host environment: {env_python}" in text


def test_no_backend_switch(aitk_ws: Workspace) -> None:
    with pytest.raises(SpecError, match="musubi-tuner does not train chroma") as caught:
        create_run(aitk_ws, datasets=["myaku"], base=BUNDLE, backend="musubi-tuner")
    assert "ai-toolkit" in (caught.value.hint or "")
