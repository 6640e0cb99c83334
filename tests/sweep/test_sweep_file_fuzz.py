"""Structure-aware fuzzing of the files a sweep folder holds (the run and workspace files are
tests/test_file_fuzz.py's): the sweep record, its approval and a trial record, damaged the
same ways, must make every reader answer or raise a :class:`~kura.errors.KuraError`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from kura.errors import KuraError
from kura.sweep.envelope import approve_sweep, check_sweep_approval, plan_sweep, planned_gpu
from kura.sweep.new import new_sweep
from kura.sweep.records import load_sweep, load_trials, sweep_dir
from kura.sweep.report import sweep_status
from kura.sweep.worker import run_worker
from kura.workspace import Workspace
from tests.sweep.conftest import base_run, write_space
from tests.test_file_fuzz import _damaged

Reader = Callable[[Workspace, str], object]

READERS: dict[str, tuple[Reader, ...]] = {
    "sweep.json": (load_sweep, load_trials, sweep_status),
    "approval.json": (check_sweep_approval,),
    "plan.json": (planned_gpu,),
    "trials/0000/trial.json": (load_trials, sweep_status),
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_sweep_reader_answers_or_names_the_damage(
    ws: Workspace, tmp_path: Path, name: str
) -> None:
    sweep_id = new_sweep(ws, base_run=base_run(ws), space=write_space(tmp_path), trials=1)["sweep"]
    plan_sweep(ws, sweep_id, gpu="h100-pcie")
    approve_sweep(ws, sweep_id)
    run_worker(ws, sweep_id, gpu="h100-pcie", seed=1)
    folder = sweep_dir(ws, sweep_id)
    path = folder / name
    if not path.is_file():  # the record's name is the store's: find the trial's record
        found = sorted((folder / "trials").rglob("*.json"))
        assert found, sorted(p.name for p in folder.rglob("*"))
        path = found[0]
    original = path.read_bytes()

    @settings(
        max_examples=20,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(_damaged("json", original))
    def damaged_file(data: bytes) -> None:
        path.write_bytes(data)
        try:
            for read in READERS[name]:
                with contextlib.suppress(KuraError):
                    read(ws, sweep_id)
        finally:
            path.write_bytes(original)

    damaged_file()
