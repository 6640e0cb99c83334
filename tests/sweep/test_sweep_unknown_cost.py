"""Unknown cost is unknown, not $0 (issue 24): a sweep with a dollar budget refuses a worker
whose GPU class has no price, since its trials would count as free and the budget would never
stop the sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from kura.errors import CheckFailed
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.records import load_trials
from kura.sweep.worker import run_worker
from kura.workspace import Workspace
from tests.sweep.conftest import base_run, write_space
from tests.sweep.test_sweep_binds_inputs import SPACE


def test_a_dollar_budget_refuses_a_worker_whose_gpu_has_no_price(
    ws: Workspace, tmp_path: Path
) -> None:
    run = base_run(ws)
    sweep = new_sweep(ws, base_run=run, space=write_space(tmp_path, SPACE), trials=2)
    plan_sweep(ws, sweep["sweep"], gpu="h100-sxm", budget_usd=5.0)
    approve_sweep(ws, sweep["sweep"])
    with pytest.raises(CheckFailed, match="GPU class h100-pcie has no price") as caught:
        run_worker(ws, sweep["sweep"], gpu="h100-pcie", seed=1)
    assert "--budget-hours" in caught.value.hint
    assert load_trials(ws, sweep["sweep"]) == []
