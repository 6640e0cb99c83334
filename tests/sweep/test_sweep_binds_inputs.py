"""A sweep's approval binds what its trials are made from (issue 24): the base run's run.yaml,
the datasets a trial reads and the model files its bundle resolves to. One changed after
`kura sweep approve` is refused at the next trial with the fix; no trial trains under the old
approval."""

from __future__ import annotations

from pathlib import Path

import pytest

from kura.errors import CheckFailed
from kura.runs.store import run_file
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.records import load_trials
from kura.sweep.worker import run_worker
from kura.workspace import Workspace
from tests.sweep.conftest import base_run, write_space

SPACE = """\
axes:
  training.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
objective: {metric: heldout_loss, validation_fraction: 0.2}
early_stop: {enabled: false}
"""


def _approved(ws: Workspace, tmp_path: Path) -> tuple[str, str]:
    run = base_run(ws, "training.network.alpha=4", "backend.config.step_sleep=0.01")
    sweep = new_sweep(ws, base_run=run, space=write_space(tmp_path, SPACE), trials=3)
    plan_sweep(ws, sweep["sweep"], gpu="h100-pcie")
    approve_sweep(ws, sweep["sweep"])
    return run, str(sweep["sweep"])


def test_a_base_run_edited_after_approval_is_refused_at_the_next_trial(
    ws: Workspace, tmp_path: Path
) -> None:
    run, sweep_id = _approved(ws, tmp_path)
    assert len(run_worker(ws, sweep_id, gpu="h100-pcie", seed=1, max_trials=1)["trials"]) == 1
    path = run_file(ws, run)
    text = path.read_text()
    assert "alpha: 4" in text and "step_sleep: 0.01" in text
    path.write_text(
        text.replace("alpha: 4", "alpha: 16").replace("step_sleep: 0.01", "step_sleep: 0.02")
    )

    with pytest.raises(
        CheckFailed, match=rf"changed after approval: runs/{run}/run.yaml"
    ) as caught:
        run_worker(ws, sweep_id, gpu="h100-pcie", seed=2)
    assert f"kura sweep plan {sweep_id}" in caught.value.hint
    assert f"kura sweep approve {sweep_id}" in caught.value.hint
    assert len(load_trials(ws, sweep_id)) == 1, "no trial may start under the old approval"

    plan_sweep(ws, sweep_id, gpu="h100-pcie")
    approve_sweep(ws, sweep_id)
    run_worker(ws, sweep_id, gpu="h100-pcie", seed=2, max_trials=1)
    second = load_trials(ws, sweep_id)[1]
    trial_yaml = run_file(ws, second.run_id).read_text()
    assert "alpha: 16" in trial_yaml and "step_sleep: 0.02" in trial_yaml


def test_a_dataset_changed_after_approval_is_refused_before_any_trial(
    ws: Workspace, tmp_path: Path
) -> None:
    from PIL import Image

    from kura.dataset.registry import media_dir, read_dataset
    from kura.sweep.records import load_sweep

    _, sweep_id = _approved(ws, tmp_path)
    train = next(iter(load_sweep(ws, sweep_id).split.train.values()))
    media = media_dir(ws, read_dataset(ws, train))
    first = sorted(media.glob("*.png"))[0]
    Image.new("RGB", (768, 512), (250, 10, 10)).save(first)

    with pytest.raises(CheckFailed, match=rf"changed after approval: dataset {train}"):
        run_worker(ws, sweep_id, gpu="h100-pcie", seed=1)
    assert load_trials(ws, sweep_id) == []


def test_a_model_file_changed_after_approval_is_refused_before_any_trial(
    ws: Workspace, tmp_path: Path
) -> None:
    import json
    import os

    from kura.sweep.records import sweep_dir

    _, sweep_id = _approved(ws, tmp_path)
    approval = json.loads((sweep_dir(ws, sweep_id) / "approval.json").read_text())
    vae = Path(os.path.realpath(approval["inputs"]["models"]["roles"]["vae"]["path"]))
    before = vae.stat()
    data = bytearray(vae.read_bytes())
    data[-1] ^= 0xFF
    vae.write_bytes(bytes(data))
    os.utime(vae, ns=(before.st_atime_ns, before.st_mtime_ns))

    with pytest.raises(CheckFailed, match=rf"sweep {sweep_id}: model file for vae") as caught:
        run_worker(ws, sweep_id, gpu="h100-pcie", seed=1)
    assert f"kura sweep approve {sweep_id}" in caught.value.hint
    assert load_trials(ws, sweep_id) == []
