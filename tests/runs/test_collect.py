"""`kura run collect`: a launched SkyPilot run's bucket folders come back into its run folder,
every file checked against the manifest the job wrote.

The bucket is a local stand-in (a folder laid out as ``<bucket>/<run>/<folder>``), filled as
the job would fill it: files written into the mounted folders, then the job's own manifest
command (:func:`manifest_command`, the one the task's EXIT trap runs) over each folder. The
cloud CLI transport runs a recording `aws` on PATH that copies from the same stand-in."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kura.errors import CheckFailed, Unsupported, UsageError
from kura.runs.collect import CloudCliTransport, FolderTransport, collect_outputs
from kura.workspace import Workspace
from tests.conftest import CliResult
from tests.runs.skypilot_run import (
    FAKE_AWS,
    LORA,
    job_writes,
    launched_sky_run,
    new_sky_run,
    sky_ws,
)

__all__ = ["sky_ws"]  # the fixture


def test_collect_brings_back_lora_samples_logs_and_metrics(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    run_id = launched_sky_run(sky_ws)
    bucket = tmp_path / "bucket"
    job_writes(bucket, run_id)
    report = collect_outputs(sky_ws, run_id, transport=FolderTransport(bucket))
    run_dir = sky_ws.run_dir(run_id)
    assert (run_dir / "output" / "lora.safetensors").read_bytes() == LORA
    assert (run_dir / "output" / "sample" / "step000004_00.png").is_file()
    assert (run_dir / "logs" / "train" / "events.out.tfevents.1.host").read_bytes() == b"tfevents"
    assert {(f.url.rsplit("/", 1)[1], f.files) for f in report.folders} == {
        ("output", 2),
        ("logs", 2),
        ("cache", 1),
    }
    assert not (run_dir / ".collect").exists()
    assert report.to_dict()["kind"] == "run-collect"


def test_a_file_that_differs_from_the_manifest_is_refused_and_nothing_moves(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    run_id = launched_sky_run(sky_ws)
    prefix = job_writes(tmp_path / "bucket", run_id)
    (prefix / "output" / "lora.safetensors").write_bytes(LORA[:-1] + b"\x02")
    with pytest.raises(CheckFailed, match=r"changed: lora\.safetensors"):
        collect_outputs(
            sky_ws, run_id, transport=FolderTransport(tmp_path / "bucket"), only=("output",)
        )
    assert not (sky_ws.run_dir(run_id) / "output" / "lora.safetensors").exists()


def test_a_file_written_after_the_manifest_is_refused(sky_ws: Workspace, tmp_path: Path) -> None:
    run_id = launched_sky_run(sky_ws)
    prefix = job_writes(tmp_path / "bucket", run_id)
    (prefix / "output" / "late.safetensors").write_bytes(b"late")
    with pytest.raises(CheckFailed, match=r"not in the manifest: late\.safetensors"):
        collect_outputs(sky_ws, run_id, transport=FolderTransport(tmp_path / "bucket"))


def test_a_job_that_wrote_no_manifest_yet_is_not_collected(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    run_id = launched_sky_run(sky_ws)
    prefix = job_writes(tmp_path / "bucket", run_id)
    (prefix / "logs" / ".kura-sha256").unlink()
    with pytest.raises(CheckFailed, match=r"has no \.kura-sha256") as caught:
        collect_outputs(
            sky_ws, run_id, transport=FolderTransport(tmp_path / "bucket"), only=("logs",)
        )
    assert "kura run status" in caught.value.hint


def test_only_names_a_bucket_folder(sky_ws: Workspace, tmp_path: Path) -> None:
    run_id = launched_sky_run(sky_ws)
    with pytest.raises(UsageError, match="no bucket folder samples"):
        collect_outputs(sky_ws, run_id, transport=FolderTransport(tmp_path), only=("samples",))


def test_the_cloud_cli_transport_syncs_each_folder_with_aws(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    run_id = launched_sky_run(sky_ws)
    bucket = tmp_path / "bucket"
    job_writes(bucket, run_id)
    record = tmp_path / "aws.jsonl"
    aws = tmp_path / "bin" / "aws"  # the fixture's bin folder, on PATH
    aws.write_text(FAKE_AWS.format(python=sys.executable, record=str(record), root=str(bucket)))
    aws.chmod(aws.stat().st_mode | stat.S_IEXEC)
    collect_outputs(sky_ws, run_id, only=("output",))
    staging = sky_ws.run_dir(run_id) / ".collect" / "output"
    assert [json.loads(line) for line in record.read_text().splitlines()] == [
        ["s3", "sync", f"s3://kura-test-bucket/runs/{run_id}/output", str(staging),
         "--only-show-errors"],
    ]  # fmt: skip
    assert (sky_ws.run_dir(run_id) / "output" / "lora.safetensors").read_bytes() == LORA


def test_gs_and_unsupported_schemes(tmp_path: Path) -> None:
    argv = CloudCliTransport().argv("gs://b/r/output", tmp_path)
    assert argv == ["gsutil", "-m", "-q", "rsync", "-r", "gs://b/r/output", str(tmp_path)]
    with pytest.raises(Unsupported, match="oci://") as caught:
        CloudCliTransport().argv("oci://b/r/output", tmp_path)
    assert "--from-folder" in caught.value.hint


def test_cli_collects_from_a_mounted_folder(
    sky_ws: Workspace, tmp_path: Path, kura: Callable[..., CliResult]
) -> None:
    run_id = launched_sky_run(sky_ws)
    job_writes(tmp_path / "bucket", run_id)
    result = kura(
        "--json", "-w", sky_ws.root, "run", "collect", run_id, "--only", "output",
        "--from-folder", tmp_path / "bucket",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    document = result.json()
    assert [f["files"] for f in document["folders"]] == [2]
    assert document["next"] == [
        {"command": f"kura run status {run_id}", "why": "the outcome, read from the collected logs"}
    ]


def test_a_run_not_launched_with_skypilot_has_nothing_to_collect(sky_ws: Workspace) -> None:
    run_id = new_sky_run(sky_ws)
    with pytest.raises(UsageError, match="not launched with SkyPilot"):
        collect_outputs(sky_ws, run_id)
