"""An explicit setting is never overwritten silently (issue 12 item 3)."""

from __future__ import annotations

from datetime import datetime

import pytest

from kura.errors import SpecError
from kura.runs.compile import compile_in_workspace
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.runs.store import load_run
from kura.workspace import Workspace


def _new(ws: Workspace, *sets: str) -> str:
    return create_run(
        ws, datasets=["myaku"], base="qwen-image", sets=list(sets), now=datetime(2026, 5, 1, 9)
    ).run_id


def test_an_out_of_range_explicit_value_is_refused_at_run_new(ws: Workspace) -> None:
    with pytest.raises(SpecError, match=r"blocks_to_swap 70 is outside 0\.\.59") as info:
        _new(ws, "backend.config.blocks_to_swap=70")
    assert "59" in info.value.hint
    assert not list(ws.runs_dir.glob("*/run.yaml"))


def test_an_out_of_range_value_edited_into_run_yaml_is_refused_at_compile(ws: Workspace) -> None:
    run_id = _new(ws)
    path = ws.run_dir(run_id) / "run.yaml"
    text = path.read_text()
    path.write_text(text.replace("  config:\n", "  config:\n    blocks_to_swap: 70\n", 1))
    with pytest.raises(SpecError, match=r"blocks_to_swap 70 is (outside|over)"):
        compile_in_workspace(ws, run_id)


def test_the_ladder_keeps_an_explicit_value_and_says_so(ws: Workspace) -> None:
    run_id = _new(ws, "backend.config.blocks_to_swap=2")
    spec, _ = load_run(ws, run_id)
    assert spec.backend.reasons["blocks_to_swap"] == "your instruction (--set)"
    report = plan_run(ws, run_id, gpu="rtx-3090").to_dict()
    spec, _ = load_run(ws, run_id)
    assert spec.backend.config["blocks_to_swap"] == 2
    assert spec.backend.reasons["blocks_to_swap"] == "your instruction (--set)"
    assert "blocks_to_swap" not in report["applied"]
    assert report["kept"]["blocks_to_swap"]["yours"] == 2
    text = (ws.run_dir(run_id) / "plan.md").read_text()
    assert "- blocks_to_swap: 2 (the ladder alone would choose" in text
