"""`kura demo` with the KohakuMoss environment present goes past "approved": it trains the
tiny model KohakuMoss builds, for real, watches it and exports the LoRA (same skip/fail rule
as the other real-run tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kura.models.header import read_header

pytestmark = pytest.mark.slow


def test_demo_trains_watches_and_exports(
    moss_env: Any, kura: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KURA_KOHAKUMOSS_ENV", str(moss_env.path))
    for variable in ("KURA_MUSUBI_ENV", "KURA_AITK_ENV"):  # KohakuMoss's walk alone
        monkeypatch.setenv(variable, str(tmp_path / f"no-env-{variable}"))
    result = kura("demo", tmp_path / "demo", "--json")
    assert result.exit_code == 0, result.stderr[-3000:]
    document = result.json()
    assert document["trainers"]["trained"] == ["kohakumoss"]
    steps = [(s["argv"][:2], s["exit_code"]) for s in document["steps"]]
    for command in (["run", "launch"], ["run", "watch"], ["run", "status"]):
        assert (command, 0) in steps, (command, steps)
    assert all(code == 0 for argv, code in steps[-8:]), steps[-8:]
    workspace = Path(document["workspace"])
    runs = sorted((workspace / "runs").iterdir())
    assert len(runs) == 2
    moss = runs[-1]
    state = json.loads((moss / "state.json").read_text())
    assert state["status"] == "succeeded"
    metrics = (moss / "output" / moss.name / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in metrics] == [1, 2, 3, 4, 5, 6]
    (exported,) = (moss / "export").glob("*-comfy.safetensors")
    assert read_header(exported).metadata["kohakumoss_format"] == "comfy"
