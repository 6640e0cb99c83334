"""A damaged approval.json is a clean CheckFailed naming the file, never a traceback."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from kura.errors import CheckFailed, InvalidInput
from kura.runs.approval import approve_run, check_approval
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace


@pytest.mark.parametrize(
    "text",
    ["[" * 3000 + "]" * 3000, '{"digest": ' + "1" * 5000 + "}", '{"digest": NaN}', "[]"],
    ids=["deep", "huge integer", "NaN", "not an object"],
)
def test_a_damaged_approval_record_is_refused_naming_the_file(ws: Workspace, text: str) -> None:
    run_id = create_run(
        ws, datasets=["myaku"], base="flux2-klein-base-4b", sets=[], now=datetime(2026, 1, 2, 3, 4)
    ).run_id
    plan_run(ws, run_id, gpu="rtx-4090")
    approve_run(ws, run_id)
    path = ws.run_dir(run_id) / "approval.json"
    path.write_text(text)
    with pytest.raises(CheckFailed, match=r"approval\.json cannot be read") as info:
        check_approval(ws, run_id)
    assert "kura run approve" in info.value.hint


@pytest.mark.parametrize(
    "contingency",
    ["relaunch", ["oom"], {"on": 7, "rung": {}, "change": {}}, {"on": "oom", "rung": "x"}],
    ids=["a string", "a list", "on is a number", "rung is a string"],
)
def test_a_plan_contingency_of_the_wrong_type_is_refused_naming_the_file(
    ws: Workspace, contingency: object
) -> None:
    """plan.json's contingency has the approval's schema: one of another type is a clean
    error naming plan.json and `kura run plan` (Kura writes it), never a pydantic traceback."""
    run_id = create_run(
        ws, datasets=["myaku"], base="flux2-klein-base-4b", sets=[], now=datetime(2026, 1, 2, 3, 4)
    ).run_id
    plan_run(ws, run_id, gpu="rtx-4090")
    path = ws.run_dir(run_id) / "plan.json"
    document = json.loads(path.read_text())
    document["contingency"] = contingency
    path.write_text(json.dumps(document))
    with pytest.raises(InvalidInput, match=r"plan\.json.*contingency") as info:
        approve_run(ws, run_id)
    assert f"kura run plan {run_id}" in info.value.hint
