"""`kura sweep launch SWEEP --workers N` (SkyPilot managed jobs): one managed job per worker, each
running `kura sweep worker` against the sweep's PostgreSQL study (a throwaway server), sent
to a recording `sky`; the tasks are loaded by SkyPilot's own ``Task.from_yaml`` and the
launch argv parsed by SkyPilot's own CLI. The study's URL is a secret: `sky` gets it in its
environment (``--secret``), and no file Kura writes holds it. The sweep's approval covers
every worker's runs: checked before any task is written, and bound into each worker."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from kura.errors import CheckFailed, UsageError
from kura.sweep.cloud import STORAGE_SECRET, approval_digest, launch_sweep_workers
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.workspace import Workspace
from kura.yamlio import load_yaml
from tests.runs.fake_checkout import prepend_path
from tests.sweep.conftest import base_run, write_space

PASSWORD = "s3cret-Pa55"

RECORDING_SKY = """#!{python}
import json, os, sys
with open({record!r}, "a") as handle:
    handle.write(json.dumps({{"argv": sys.argv[1:], "storage": os.environ.get({name!r})}}) + "\\n")
print("Managed job submitted.")
"""


def _sky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A recording `sky` (outside the workspace): its argv and the secret it was handed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "sky-calls.jsonl"
    sky = bin_dir / "sky"
    sky.write_text(
        RECORDING_SKY.format(python=sys.executable, record=str(record), name=STORAGE_SECRET)
    )
    sky.chmod(sky.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", prepend_path(bin_dir))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    return record


def _approved_sweep(ws: Workspace, tmp_path: Path, storage: str) -> str:
    run = base_run(ws)
    space = write_space(tmp_path, "axes:\n  training.learning_rate: {low: 1.0e-5, high: 1.0e-2}\n")
    sweep_id = str(new_sweep(ws, base_run=run, space=space, trials=4, storage=storage)["sweep"])
    plan_sweep(ws, sweep_id, gpu="h100-sxm")
    approve_sweep(ws, sweep_id)
    return sweep_id


def _setup(tmp_path: Path) -> Path:
    path = tmp_path / "worker-setup.sh"
    path.write_text("pip install 'kura[sweep] @ git+https://example.org/kura'\n")
    return path


def _with_password(url: str) -> str:
    return url.replace("postgresql://kura@", f"postgresql://kura:{PASSWORD}@")


def test_each_worker_is_a_managed_job_handed_the_storage_as_a_secret(
    ws: Workspace, tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _sky(tmp_path, monkeypatch)
    sweep_id = _approved_sweep(ws, tmp_path, pg_url)
    secret_url = _with_password(pg_url)
    launched = launch_sweep_workers(
        ws, sweep_id, workers=3, gpu="h100-sxm", setup_script=_setup(tmp_path),
        storage_url=secret_url,
    )  # fmt: skip
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    tasks = [ws.root / job.task for job in launched.workers]
    assert [c["argv"] for c in calls] == [
        ["jobs", "launch", "-n", f"kura-sweep-{sweep_id}-w{n}", "-y", "-d",
         "--secret", STORAGE_SECRET, str(task)]
        for n, task in zip((1, 2, 3), tasks, strict=True)
    ]  # fmt: skip
    assert [c["storage"] for c in calls] == [secret_url] * 3
    document = launched.to_dict()
    assert document["kind"] == "sweep-launch"
    assert document["next"] == [
        {"command": f"kura sweep status {sweep_id}", "why": "trials as the workers report them"}
    ]
    assert len({job.seed for job in launched.workers}) == 3

    digest = approval_digest(ws, sweep_id)
    task = load_yaml(tasks[0])
    assert task["secrets"] == {STORAGE_SECRET: None}
    assert task["resources"]["accelerators"] == "H100:1"
    assert task["file_mounts"][str(ws.root)] == str(ws.root)
    assert f"--approval {digest}" in task["run"]
    assert f'--storage "${{{STORAGE_SECRET}}}"' in task["run"]
    assert (
        f"sweep worker {sweep_id} --gpu h100-sxm --seed {launched.workers[0].seed}" in (task["run"])
    )

    written = [p for p in ws.root.rglob("*") if p.is_file()]
    holding = [p for p in written if PASSWORD.encode() in p.read_bytes()]
    assert holding == []  # no task, no record, no log holds the password


def test_the_worker_tasks_and_launch_are_ones_skypilot_accepts(
    ws: Workspace, tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.execution.skypilot_own_code import load_with_skypilot, parse_with_skypilot

    record = _sky(tmp_path, monkeypatch)
    sweep_id = _approved_sweep(ws, tmp_path, pg_url)
    launched = launch_sweep_workers(
        ws, sweep_id, workers=2, gpu="l40s", setup_script=_setup(tmp_path), storage_url=pg_url
    )
    loaded = load_with_skypilot([ws.root / j.task for j in launched.workers], tmp_path / "home")
    for found in loaded:
        assert "error" not in found, found
        assert found["secret_refs"] == [STORAGE_SECRET]
        assert found["accelerators"] == {"L40S": 1}
        assert found["file_mounts"][str(ws.root)] == str(ws.root)
    argv = ["sky", *json.loads(record.read_text().splitlines()[0])["argv"]]
    parsed = parse_with_skypilot(argv, tmp_path / "home", {STORAGE_SECRET: pg_url})
    assert parsed["params"]["detach_run"] is True
    assert parsed["params"]["secret"] == [[STORAGE_SECRET, pg_url]]


def test_a_sweep_changed_since_approval_launches_no_worker(
    ws: Workspace, tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _sky(tmp_path, monkeypatch)
    sweep_id = _approved_sweep(ws, tmp_path, pg_url)
    base = json.loads((ws.root / "sweeps" / sweep_id / "sweep.json").read_text())["base_run"]
    run_yaml = ws.run_dir(base) / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("max_steps: 8", "max_steps: 9"))
    with pytest.raises(CheckFailed, match="changed after approval"):
        launch_sweep_workers(
            ws, sweep_id, workers=2, gpu="h100-sxm", setup_script=_setup(tmp_path),
            storage_url=pg_url,
        )  # fmt: skip
    assert not record.exists()
    assert not (ws.root / "sweeps" / sweep_id / "workers").exists()


def test_a_worker_runs_only_under_the_approval_it_was_launched_with(
    ws: Workspace, tmp_path: Path, pg_url: str
) -> None:
    from kura.sweep.worker import run_worker

    sweep_id = _approved_sweep(ws, tmp_path, pg_url)
    with pytest.raises(CheckFailed, match="not the one these workers were launched under"):
        run_worker(ws, sweep_id, gpu="h100-sxm", storage_url=pg_url, approval="0" * 64)


def test_a_journal_study_cannot_be_shared_by_rented_workers(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sky(tmp_path, monkeypatch)
    sweep_id = _approved_sweep(ws, tmp_path, "journal")
    with pytest.raises(UsageError, match="journal file") as caught:
        launch_sweep_workers(ws, sweep_id, workers=1, gpu="h100-sxm", setup_script=_setup(tmp_path))
    assert "postgresql://" in caught.value.hint
