"""Measured facts are credited to what actually ran; every attempt is evidence (issue 12
items 4 and 5)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from kura.execution.gpuwatch import read_gpu
from kura.runs.approval import approve_run
from kura.runs.history import PastRun, ignored_ratios, step_time_factor
from kura.runs.launching import launch_run, relaunch_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from tests.runs.fake_checkout import set_mode, use_fake_checkout

BUNDLE = "flux2-klein-base-4b"
GIB = 2**30


class FakeNvml:
    """NVML as nvidia-ml-py exposes it, for one RTX 3090 whose only process is ``pid``."""

    NVMLError = RuntimeError

    def __init__(self, pid: int, *, fail: bool = False) -> None:
        self.pid, self.fail = pid, fail

    def nvmlInit(self) -> None:
        if self.fail:
            raise RuntimeError("Driver Not Loaded")

    def nvmlShutdown(self) -> None: ...

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"NVIDIA GeForce RTX 3090"

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(total=24 * GIB, used=20 * GIB, free=4 * GIB)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=self.pid, usedGpuMemory=18 * GIB)]


def test_the_gpu_is_read_with_its_class_and_the_steps_own_memory() -> None:
    reading = read_gpu(FakeNvml(os.getpid()), session=os.getsid(0))  # type: ignore[arg-type]
    assert reading.name == "NVIDIA GeForce RTX 3090"
    assert reading.gpu_class == "rtx-3090"
    assert reading.process_gib == 18.0
    assert reading.used_gib == 20.0


def test_an_unreadable_gpu_is_unknown_with_why() -> None:
    reading = read_gpu(FakeNvml(1, fail=True), session=None)  # type: ignore[arg-type]
    assert reading.name is None and reading.gpu_class is None
    assert "Driver Not Loaded" in reading.source


def _run(**kw: object) -> PastRun:
    values: dict[str, object] = {
        "run_id": "r",
        "status": "succeeded",
        "diagnosis": None,
        "config": {},
        "estimated_step": 2.0,
        "measured_step": 2.2,
        "attempt": 1,
        "planned_gpu": "h100-sxm",
        "gpu": "h100-sxm",
    }
    values.update(kw)
    return PastRun(**values)  # type: ignore[arg-type]


def test_recalibration_needs_a_read_gpu_of_the_class_and_is_bounded() -> None:
    assert step_time_factor([_run()], "h100-sxm") == pytest.approx(1.1)
    unknown = _run(gpu=None)
    other = _run(gpu="rtx-3090")
    wild = _run(measured_step=0.15)  # a 13× "speed-up"
    assert step_time_factor([unknown, other, wild], "h100-sxm") is None
    why = [i["why"] for i in ignored_ratios([unknown, other, wild], "h100-sxm")]
    assert why[0] == "its GPU was not read"
    assert why[1] == "it ran on rtx-3090"
    assert "not believed" in why[2]


@pytest.fixture
def host_ws(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    use_fake_checkout(ws, tmp_path, BUNDLE, monkeypatch)
    return ws


def _new(ws: Workspace, hour: int) -> str:
    return create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=host", "training.epochs=2"],
        now=datetime(2026, 11, 30, hour, 0),
    ).run_id


def test_a_run_on_a_machine_without_a_readable_gpu_records_that(host_ws: Workspace) -> None:
    run_id = _new(host_ws, 8)
    plan_run(host_ws, run_id, gpu="rtx-4090")
    approve_run(host_ws, run_id)
    launch_run(host_ws, run_id, detach=False)
    state = json.loads((host_ws.run_dir(run_id) / "state.json").read_text())
    assert state["gpu"]["gpu_class"] is None
    assert state["gpu"]["source"].startswith("unknown")


def test_an_oom_stays_evidence_after_a_later_attempt_succeeds(host_ws: Workspace) -> None:
    checkout = Path(host_ws.config().executor.musubi_checkout or "")
    first = _new(host_ws, 8)
    plan_run(host_ws, first, gpu="rtx-4090")
    approve_run(host_ws, first)
    set_mode(checkout, "oom")
    launch_run(host_ws, first, detach=False)
    set_mode(checkout, "ok")
    assert relaunch_run(host_ws, first, detach=False).state.status == "succeeded"
    second = _new(host_ws, 9)
    report = plan_run(host_ws, second, gpu="rtx-4090").to_dict()
    attempts = [(r["run"], r["attempt"], r["status"]) for r in report["evidence"]["runs"]]
    assert attempts == [(first, 1, "failed"), (first, 2, "succeeded")]
    assert report["evidence"]["same_config_oom"] == [first]
    assert report["fits"] is False
    assert report["evidence"]["succeeded_configs"][0]["attempt"] == 2
    text = (host_ws.run_dir(second) / "plan.md").read_text()
    assert f"- run {first}: failed (cuda_oom) on GPU not read" in text
    assert f"worked instead: run {first} attempt 2" in text


def test_caching_durations_recalibrate_per_step_bounded_and_on_a_read_gpu() -> None:
    from kura.runs.history import step_duration_factors

    estimated = {"cache_latents": 100.0, "cache_text_encoder": 60.0}
    one = _run(step_seconds={"cache_latents": 150.0}, estimated_step_seconds=estimated)
    two = _run(
        step_seconds={"cache_latents": 250.0, "cache_text_encoder": 30.0},
        estimated_step_seconds=estimated,
    )
    assert step_duration_factors([one, two], "h100-sxm") == {
        "cache_latents": pytest.approx(2.0),
        "cache_text_encoder": pytest.approx(0.5),
    }
    measured = {"cache_latents": 150.0}
    unread = _run(gpu=None, step_seconds=measured, estimated_step_seconds=estimated)
    wild = _run(step_seconds={"cache_latents": 5.0}, estimated_step_seconds=estimated)  # ×0.05
    other = _run(gpu="rtx-3090", step_seconds=measured, estimated_step_seconds=estimated)
    assert step_duration_factors([unread, wild, other], "h100-sxm") == {}


def test_a_past_runs_measured_caching_time_recalibrates_the_next_plan(
    host_ws: Workspace,
) -> None:
    first = _new(host_ws, 8)
    plan_run(host_ws, first, gpu="rtx-4090")
    approve_run(host_ws, first)
    assert launch_run(host_ws, first, detach=False).state.status == "succeeded"
    run_dir = host_ws.run_dir(first)
    planned = json.loads((run_dir / "plan.json").read_text())["estimate"]["steps"]
    estimated = next(s["seconds"] for s in planned if s["step"] == "cache_text_encoder")
    state = json.loads((run_dir / "state.json").read_text())
    state["gpu"] = {"gpu_class": "rtx-4090", "source": "read in the test"}
    record = next(s for s in state["steps"] if s["name"] == "cache_text_encoder")
    assert record["status"] == "succeeded"
    began = datetime(2026, 11, 30, 8, 0)
    record["started_at"] = began.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    ended = began + timedelta(seconds=2 * estimated)
    record["finished_at"] = ended.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    (run_dir / "state.json").write_text(json.dumps(state))
    second = _new(host_ws, 9)
    report = plan_run(host_ws, second, gpu="rtx-4090").to_dict()
    factors = report["evidence"]["step_duration_factors"]
    assert factors["cache_text_encoder"] == pytest.approx(2.0, rel=0.05)
    steps = {s["step"]: s for s in report["estimate"]["steps"]}
    text = steps["cache_text_encoder"]
    scaled = text["estimated_seconds"] * factors["cache_text_encoder"]
    assert text["seconds"] == pytest.approx(scaled, rel=0.01)
    assert any("recalibrated" in note for note in text["notes"])
    assert "estimated_seconds" not in steps["cache_latents"]  # not measured: not recalibrated
    cost = report["estimate"]["time_and_cost"]
    hours = cost["by_step_hours"]["cache_text_encoder"]
    assert hours == pytest.approx(text["seconds"] / 3600, abs=1e-3)


def test_a_finished_runs_evidence_is_read_again_only_when_its_files_change(
    host_ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kura.runs.history as history

    read: list[str] = []
    real = history._attempts

    def counted(workspace: Workspace, run_id: str, base: str) -> list[PastRun]:
        read.append(run_id)
        return real(workspace, run_id, base)

    monkeypatch.setattr(history, "_attempts", counted)
    checkout = Path(host_ws.config().executor.musubi_checkout or "")
    first = _new(host_ws, 8)
    plan_run(host_ws, first, gpu="rtx-4090")
    approve_run(host_ws, first)
    set_mode(checkout, "oom")
    launch_run(host_ws, first, detach=False)
    set_mode(checkout, "ok")
    second = _new(host_ws, 9)
    for _ in range(3):
        report = plan_run(host_ws, second, gpu="rtx-4090").to_dict()
        assert [(r["run"], r["attempt"]) for r in report["evidence"]["runs"]] == [(first, 1)]
    assert read == [first]
    assert relaunch_run(host_ws, first, detach=False).state.status == "succeeded"
    report = plan_run(host_ws, second, gpu="rtx-4090").to_dict()
    assert [(r["run"], r["attempt"]) for r in report["evidence"]["runs"]] == [
        (first, 1),
        (first, 2),
    ]
    assert read == [first, first]
