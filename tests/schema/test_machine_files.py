"""Files Kura alone writes: one schema each, printed by `kura schema`, enforced on read."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from kura.errors import InvalidInput
from kura.schema.catalog import SCHEMAS, json_schema
from kura.workspace import Workspace


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_file_has_a_closed_schema(name: str) -> None:
    schema = json_schema(name)
    assert schema.get("additionalProperties") is False, name
    assert schema["properties"]


def _compiled_run(ws: Workspace) -> str:
    from kura.runs.compile import compile_in_workspace
    from kura.runs.new import create_run

    run_id = create_run(
        ws, datasets=["myaku"], base="flux2-klein-base-4b", now=datetime(2026, 12, 1, 10, 0)
    ).run_id
    compile_in_workspace(ws, run_id)
    return run_id


def test_a_hand_edited_steps_file_is_refused_naming_the_key(tmp_path: Path) -> None:
    from tests.builders import character_workspace

    from kura.runs.context import load_context
    from kura.runs.launching import _launch_spec

    ws = character_workspace(tmp_path)
    run_id = _compiled_run(ws)
    path = ws.run_dir(run_id) / "compiled" / "steps.json"
    document = json.loads(path.read_text())
    document["steps"][0]["argv"] = "python train.py --evil"
    path.write_text(json.dumps(document))
    with pytest.raises(InvalidInput, match=r"steps\.json.*steps\.0\.argv") as caught:
        _launch_spec(ws, load_context(ws, run_id), skip=[], extra_train=())
    assert "kura run plan" in (caught.value.hint or "")


def test_a_damaged_inspection_report_is_an_error_not_a_missing_one(tmp_path: Path) -> None:
    from tests.builders import character_workspace

    from kura.dataset.registry import load_inspection

    ws = character_workspace(tmp_path)
    path = ws.dataset_dir("myaku") / "inspection.json"
    document = json.loads(path.read_text())
    document["blocking_problems"] = "none"
    path.write_text(json.dumps(document))
    with pytest.raises(InvalidInput, match=r"inspection\.json.*blocking_problems"):
        load_inspection(ws, "myaku")
