"""A SkyPilot run followed like a local one: `kura run status` (and `run watch` and the web
run page, which read it) shows the managed job's state as a recording `sky` reports it
(``sky jobs queue``, in the shape of SkyPilot's own ``ManagedJobRecord`` dumps), and once
the job ended it collects the outputs from the bucket, digest-checked, once; the collected
logs then give the loss like a local run's."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from kura.execution.executors.skypilot import manifest_command
from kura.runs.following import run_status
from kura.workspace import Workspace
from tests.conftest import CliResult
from tests.execution.tfevents_writer import EventWriter
from tests.runs.skypilot_run import FAKE_AWS, LORA, job_writes, launched_sky_run, sky_ws
from tests.web.helpers import client

__all__ = ["sky_ws"]  # the fixture


def _skypilot_reports(
    tmp_path: Path, run_id: str, status: str, *, recoveries: int = 0, reason: str | None = None
) -> None:
    """What the recording `sky` prints for `sky jobs queue -o json` (keys of SkyPilot's
    ``ManagedJobRecord``; an older job of the same name and another job beside it)."""
    records = [
        {"job_id": 5, "task_id": 0, "job_name": f"kura-{run_id}", "status": "CANCELLED",
         "recovery_count": 0, "failure_reason": None, "submitted_at": 1.0},
        {"job_id": 7, "task_id": 0, "job_name": f"kura-{run_id}", "status": status,
         "recovery_count": recoveries, "failure_reason": reason, "submitted_at": 2.0},
        {"job_id": 8, "task_id": 0, "job_name": "kura-other", "status": "RUNNING",
         "recovery_count": 0, "failure_reason": None, "submitted_at": 3.0},
    ]  # fmt: skip
    (tmp_path / "sky-queue.json").write_text(json.dumps(records))


def _recording_aws(tmp_path: Path, bucket: Path) -> Path:
    record = tmp_path / "aws.jsonl"
    aws = tmp_path / "bin" / "aws"  # the fixture's bin folder, on PATH
    aws.write_text(FAKE_AWS.format(python=sys.executable, record=str(record), root=str(bucket)))
    aws.chmod(aws.stat().st_mode | stat.S_IEXEC)
    return record


def _calls(path: Path) -> list[list[str]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _queue_calls(tmp_path: Path) -> int:
    return sum(call[:2] == ["jobs", "queue"] for call in _calls(tmp_path / "sky.jsonl"))


def _job_ran(bucket: Path, run_id: str) -> Path:
    """The job's files in the bucket, with Musubi's loss in its TensorBoard logs and the
    attempt record of a job recovered once, then each folder's manifest."""
    prefix = job_writes(bucket, run_id)
    writer = EventWriter(prefix / "logs" / "20261202010000")
    for step, value in enumerate((0.9, 0.7, 0.5), start=1):
        writer.add(step, {"loss/current": value})
    state = f"/kura/run/output/{run_id}-000001-state"
    (prefix / "logs" / "kura-attempts.tsv").write_text(
        f"1\t2026-12-02T01:00:00Z\t\n2\t2026-12-02T02:00:00Z\t{state}\n"
    )
    subprocess.run(["bash", "-c", manifest_command(str(prefix / "logs"))], check=True)
    return prefix


def test_status_shows_the_running_job_and_its_recoveries(sky_ws: Workspace, tmp_path: Path) -> None:
    run_id = launched_sky_run(sky_ws)
    _skypilot_reports(tmp_path, run_id, "RUNNING", recoveries=1)
    status = run_status(sky_ws, run_id)
    assert status.cloud is not None and status.cloud.job is not None
    assert (status.cloud.job.job_id, status.cloud.job.status) == (7, "RUNNING")
    assert status.cloud.recoveries == 1
    assert status.cloud.collected_at is None
    assert status.to_dict()["cloud"]["job"]["status"] == "RUNNING"  # type: ignore[index]
    assert _calls(tmp_path / "sky.jsonl")[-1] == [
        "jobs", "queue", "--all", "--verbose", "-o", "json"
    ]  # fmt: skip
    run_status(sky_ws, run_id)
    assert _queue_calls(tmp_path) == 1  # a fresh answer is not asked for again at once
    assert not (tmp_path / "aws.jsonl").exists()  # still running: nothing collected


def test_status_collects_once_when_the_job_ended(sky_ws: Workspace, tmp_path: Path) -> None:
    run_id = launched_sky_run(sky_ws)
    bucket = tmp_path / "bucket"
    _job_ran(bucket, run_id)
    aws = _recording_aws(tmp_path, bucket)
    _skypilot_reports(tmp_path, run_id, "SUCCEEDED", recoveries=1)
    status = run_status(sky_ws, run_id)
    run_dir = sky_ws.run_dir(run_id)
    assert status.cloud is not None and status.cloud.collected_at is not None
    assert status.cloud.collect_error is None
    assert (run_dir / "output" / "lora.safetensors").read_bytes() == LORA
    assert [call[:3] for call in _calls(aws)] == [
        ["s3", "sync", f"s3://kura-test-bucket/runs/{run_id}/{name}"]
        for name in ("cache", "logs", "output")
    ]
    assert status.scalars is not None and status.scalars["loss/current"] == (3, 0.5)
    assert [(a.number, a.resumed_from) for a in status.cloud.attempts] == [
        (1, None),
        (2, f"/kura/run/output/{run_id}-000001-state"),
    ]
    again = run_status(sky_ws, run_id)
    assert len(_calls(aws)) == 3  # once
    assert _queue_calls(tmp_path) == 1  # an ended job's state is final
    assert again.cloud is not None and again.cloud.collected_at == status.cloud.collected_at


def test_a_failed_job_is_collected_too_and_says_why(sky_ws: Workspace, tmp_path: Path) -> None:
    run_id = launched_sky_run(sky_ws)
    bucket = tmp_path / "bucket"
    _job_ran(bucket, run_id)
    _recording_aws(tmp_path, bucket)
    _skypilot_reports(tmp_path, run_id, "FAILED", reason="user code exited with 1")
    status = run_status(sky_ws, run_id)
    assert status.cloud is not None and status.cloud.job is not None
    assert status.cloud.job.failure_reason == "user code exited with 1"
    assert status.cloud.collected_at is not None  # the logs say why


def test_a_collect_that_fails_its_digest_check_is_shown_and_retried(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    run_id = launched_sky_run(sky_ws)
    bucket = tmp_path / "bucket"
    prefix = _job_ran(bucket, run_id)
    (prefix / "output" / "lora.safetensors").write_bytes(LORA[:-1] + b"\x02")
    _recording_aws(tmp_path, bucket)
    _skypilot_reports(tmp_path, run_id, "SUCCEEDED")
    status = run_status(sky_ws, run_id)
    assert status.cloud is not None and status.cloud.collected_at is None
    assert "does not match its manifest" in str(status.cloud.collect_error)
    assert status.next[0].command == f"kura run collect {run_id}"
    assert not (sky_ws.run_dir(run_id) / "output" / "lora.safetensors").exists()
    (prefix / "output" / "lora.safetensors").write_bytes(LORA)
    status = run_status(sky_ws, run_id)
    assert status.cloud is not None and status.cloud.collected_at is not None


def test_status_and_the_run_page_show_the_cloud_job(
    sky_ws: Workspace, tmp_path: Path, kura: Callable[..., CliResult]
) -> None:
    run_id = launched_sky_run(sky_ws)
    _skypilot_reports(tmp_path, run_id, "RECOVERING", recoveries=2)
    result = kura("-w", sky_ws.root, "run", "status", run_id)
    assert result.exit_code == 0, result.stderr
    assert f"cloud job kura-{run_id} #7: RECOVERING" in result.stdout
    assert "recovered by SkyPilot 2 time(s)" in result.stdout
    page = client(sky_ws).get(f"/runs/{run_id}")
    assert page.status_code == 200
    assert "Cloud job" in page.text and "RECOVERING" in page.text
    assert f"kura-{run_id} #7" in page.text
