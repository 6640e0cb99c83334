"""``sweeps/<id>/plan.json`` has one schema: what `kura sweep plan` returns is what it wrote,
read back equal, and a hand edit is refused naming the file, the key and `kura sweep plan`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kura.errors import InvalidInput
from kura.sweep.envelope import approve_sweep, check_sweep_approval, plan_sweep, planned_gpu
from kura.sweep.new import new_sweep
from kura.sweep.plan_file import PLAN_JSON, ChoiceAxis, RangeAxis, read_sweep_plan
from kura.sweep.records import sweep_dir
from kura.workspace import Workspace
from tests.sweep.conftest import base_run, write_space


def _planned(ws: Workspace, tmp_path: Path) -> str:
    sweep_id = new_sweep(ws, base_run=base_run(ws), space=write_space(tmp_path), trials=2)["sweep"]
    return str(sweep_id)


def test_the_plan_written_reads_back_equal_and_keeps_its_keys(
    ws: Workspace, tmp_path: Path
) -> None:
    sweep_id = _planned(ws, tmp_path)
    plan = plan_sweep(ws, sweep_id, gpu="h100-pcie", budget_hours=2.0)
    folder = sweep_dir(ws, sweep_id)
    assert read_sweep_plan(folder, sweep_id) == plan
    assert [type(a) for a in plan.axes] == [RangeAxis, ChoiceAxis]
    assert plan.budget.hours == 2.0 and plan.gpu.id == "h100-pcie"
    document = json.loads((folder / PLAN_JSON).read_text())
    assert document["kind"] == "sweep-plan"
    assert document["changes"]["execution.gpu_class"] == "the worker's GPU"
    assert "choices" in document["axes"][1] and "kind" not in document["axes"][1]
    assert document == plan.model_dump(mode="json", by_alias=True)
    assert planned_gpu(ws, sweep_id) == "h100-pcie"
    approve_sweep(ws, sweep_id)
    assert check_sweep_approval(ws, sweep_id) == plan


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda d: d.update(trials="3"), "trials"),
        (lambda d: d["budget"].update(hours="2"), r"budget\.hours"),
        (lambda d: d.update(notes="mine"), "notes"),
        (lambda d: d["estimate"]["configs"][0].update(fits="yes"), r"estimate\.configs\.0"),
    ],
)
def test_a_hand_edited_plan_is_refused_naming_the_file_key_and_remedy(
    ws: Workspace, tmp_path: Path, edit: object, key: str
) -> None:
    sweep_id = _planned(ws, tmp_path)
    plan_sweep(ws, sweep_id, gpu="h100-pcie")
    path = sweep_dir(ws, sweep_id) / PLAN_JSON
    document = json.loads(path.read_text())
    assert callable(edit)
    edit(document)
    path.write_text(json.dumps(document))
    with pytest.raises(InvalidInput, match=rf"plan\.json.*SweepPlan.*{key}") as caught:
        planned_gpu(ws, sweep_id)
    assert f"kura sweep plan {sweep_id}" in (caught.value.hint or "")
