"""Launch and relaunch take one snapshot under one hold of the workspace lock: the gate
checks the run.yaml, plan.json, run.lock and dataset.yaml it read once (plan.json's run.yaml
digest against the snapshot's), and the launch spec is made from that same snapshot."""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kura.runs.approval import approve_run
from kura.runs.launching import launch_run, relaunch_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from tests.runs.fake_checkout import set_mode, use_fake_checkout

BUNDLE = "flux2-klein-base-4b"
_COUNTED = ("run.yaml", "plan.json", "run.lock", "dataset.yaml")
_recorders: list[Counter[str]] = []


def _count_opens(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _recorders and isinstance(args[0], str | bytes | os.PathLike):
        name = os.path.basename(os.fsdecode(args[0]))
        if name in _COUNTED:
            _recorders[-1][name] += 1


sys.addaudithook(_count_opens)  # an audit hook stays for the process: it counts only inside


@contextmanager
def _opens() -> Iterator[Counter[str]]:
    counts: Counter[str] = Counter()
    _recorders.append(counts)
    try:
        yield counts
    finally:
        _recorders.remove(counts)


@pytest.fixture
def host_ws(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    use_fake_checkout(ws, tmp_path, BUNDLE, monkeypatch)
    return ws


@pytest.fixture
def lock_holds(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times the workspace lock's flock was taken (a reentrant hold takes none)."""
    import kura.locking as locking

    held: Counter[str] = Counter()
    acquire = locking._acquired

    @contextmanager
    def counting(lock_path: Path, timeout: float | None) -> Iterator[None]:
        held["flock"] += 1
        with acquire(lock_path, timeout):
            yield

    monkeypatch.setattr(locking, "_acquired", counting)
    return held


def _approved(ws: Workspace) -> str:
    run_id = create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=host", "training.epochs=2"],
        now=datetime(2026, 11, 30, 8, 0),
    ).run_id
    plan_run(ws, run_id, gpu="rtx-4090")
    approve_run(ws, run_id)
    return run_id


def test_launch_reads_run_yaml_and_plan_json_once_under_one_lock(
    host_ws: Workspace, lock_holds: Counter[str]
) -> None:
    run_id = _approved(host_ws)
    lock_holds.clear()
    with _opens() as opened:
        assert launch_run(host_ws, run_id, detach=False).state.status == "succeeded"
    assert opened == Counter({"run.yaml": 1, "plan.json": 1, "run.lock": 1, "dataset.yaml": 1})
    assert lock_holds["flock"] == 1


def test_relaunch_reads_run_yaml_and_the_dataset_once_under_one_lock(
    host_ws: Workspace, lock_holds: Counter[str]
) -> None:
    run_id = _approved(host_ws)
    checkout = Path(host_ws.config().executor.musubi_checkout or "")
    set_mode(checkout, "oom")
    assert launch_run(host_ws, run_id, detach=False).state.status == "failed"
    set_mode(checkout, "ok")
    lock_holds.clear()
    with _opens() as opened:
        assert relaunch_run(host_ws, run_id, detach=False).state.status == "succeeded"
    # One read; the contingency's write goes through a temporary file renamed onto run.yaml.
    assert (opened["run.yaml"], opened["dataset.yaml"]) == (1, 1), opened
    assert lock_holds["flock"] == 1


def test_relaunch_lists_the_dataset_folder_once_for_its_gates_compile_and_approval(
    host_ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate, the recompile after the contingency, the re-approval and the second gate
    see one look at the folder (each asked it again before)."""
    from kura.dataset import scan as scan_module
    from kura.dataset.onelook import current_look

    run_id = _approved(host_ws)
    checkout = Path(host_ws.config().executor.musubi_checkout or "")
    set_mode(checkout, "oom")
    assert launch_run(host_ws, run_id, detach=False).state.status == "failed"
    set_mode(checkout, "ok")
    listed: list[Path] = []
    looks_while_training: list[object] = []
    real_scan = scan_module._scan_dataset

    def counting(root, caption_ext, skip):  # type: ignore[no-untyped-def]
        listed.append(Path(root))
        return real_scan(root, caption_ext, skip)

    from kura.runs import launching

    real_start = launching._start

    def noting(ready, **options):  # type: ignore[no-untyped-def]
        looks_while_training.append(current_look())
        return real_start(ready, **options)

    monkeypatch.setattr(scan_module, "_scan_dataset", counting)
    monkeypatch.setattr(launching, "_start", noting)
    assert relaunch_run(host_ws, run_id, detach=False).state.status == "succeeded"
    assert len(listed) == 1, listed
    assert looks_while_training == [None], "the look ends before the executor starts"
