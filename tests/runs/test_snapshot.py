"""One snapshot per command: `kura run plan` reads run.yaml and each dataset.yaml once, under
one hold of the workspace lock, and approve and launch refuse a run.yaml that is not the
text the plan was made from."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import kura.runs.plan as plan_module
from kura.errors import CheckFailed
from kura.runs.approval import approve_run, check_approval
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace

_COUNTED = ("run.yaml", "dataset.yaml", "inspection.json", "kura.toml", "lock")
_recorders: list[Counter[str]] = []


def _count_opens(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _recorders and isinstance(args[0], str | bytes | os.PathLike):
        name = os.path.basename(os.fsdecode(args[0]))
        if name in _COUNTED:
            _recorders[-1][name] += 1


sys.addaudithook(_count_opens)  # an audit hook stays for the process: it counts only inside


@contextmanager
def _opens() -> Iterator[Counter[str]]:
    """Every open (read or write, by any API) of the files named in ``_COUNTED``."""
    counts: Counter[str] = Counter()
    _recorders.append(counts)
    try:
        yield counts
    finally:
        _recorders.remove(counts)


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


def _run(ws: Workspace) -> str:
    return create_run(
        ws, datasets=["myaku"], base="flux2-klein-base-4b", sets=[], now=datetime(2026, 11, 30, 7)
    ).run_id


def _network_dim(ws: Workspace, run_id: str) -> str:
    steps = json.loads((ws.run_dir(run_id) / "compiled" / "steps.json").read_text())
    argv = next(s["argv"] for s in steps["steps"] if "--network_dim" in s["argv"])
    return str(argv[argv.index("--network_dim") + 1])


def test_plan_and_approve_open_run_yaml_and_the_dataset_once_under_one_lock(
    ws: Workspace, lock_holds: Counter[str]
) -> None:
    run_id = _run(ws)
    lock_holds.clear()
    with _opens() as first:
        plan_run(ws, run_id, gpu="rtx-4090")  # applies the ladder's aids: run.yaml is written
    assert first["run.yaml"] == 1 and first["dataset.yaml"] == 1, first
    assert first["inspection.json"] == 1 and lock_holds["flock"] == 1, (first, lock_holds)
    lock_holds.clear()
    with _opens() as warm:
        plan_run(ws, run_id, gpu="rtx-4090")
    assert warm.pop("kura.toml", 0) <= 1  # read again only when its stat changed
    assert warm == Counter({"run.yaml": 1, "dataset.yaml": 1, "inspection.json": 1, "lock": 1})
    assert lock_holds["flock"] == 1
    lock_holds.clear()
    with _opens() as approving:
        approve_run(ws, run_id)
    approving.pop("kura.toml", None)
    assert approving == Counter({"run.yaml": 1, "dataset.yaml": 1, "inspection.json": 1, "lock": 1})
    assert lock_holds["flock"] == 1


def test_a_plan_of_an_unchanged_run_writes_nothing(ws: Workspace) -> None:
    run_id = _run(ws)
    plan_run(ws, run_id, gpu="rtx-4090")  # the ladder's aids go into run.yaml
    plan_run(ws, run_id, gpu="rtx-4090")  # the plan of the run with them
    files = [
        ws.run_dir(run_id) / "run.yaml",
        ws.run_dir(run_id) / "plan.json",
        ws.run_dir(run_id) / "plan.md",
        ws.dataset_dir("myaku") / "dataset.yaml",
        ws.dataset_dir("myaku") / "inspection.json",
        *sorted((ws.run_dir(run_id) / "compiled").iterdir()),
    ]
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in files}
    plan_run(ws, run_id, gpu="rtx-4090")
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in files} == before


def test_a_save_during_the_plan_does_not_split_the_plan_from_its_compiled_run(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run.yaml saved with rank 8 after the estimate, before the compile: plan.md, plan.json
    and the compiled files all say rank 32 (the snapshot the plan was made from), and
    approve refuses the rank-8 run.yaml the plan never saw."""
    run_id = _run(ws)
    path = ws.run_dir(run_id) / "run.yaml"
    assert "    rank: 32" in path.read_text()
    evidence = plan_module._evidence  # read after the estimate, before the compile

    def save_between(*args: Any) -> dict[str, Any]:
        path.write_text(path.read_text().replace("    rank: 32", "    rank: 8"))
        return evidence(*args)

    monkeypatch.setattr(plan_module, "_evidence", save_between)
    report = plan_run(ws, run_id, gpu="h200")
    monkeypatch.setattr(plan_module, "_evidence", evidence)
    assert report.estimate["lora"]["rank"] == 32
    assert _network_dim(ws, run_id) == "32"
    assert "    rank: 8" in path.read_text()
    with pytest.raises(CheckFailed, match="changed since its plan") as refused:
        approve_run(ws, run_id)
    assert f"kura run plan {run_id}" in (refused.value.hint or "")
    plan_run(ws, run_id, gpu="h200")
    approve_run(ws, run_id)
    assert _network_dim(ws, run_id) == "8"


def test_plan_json_records_the_run_yaml_it_was_made_from(ws: Workspace) -> None:
    import hashlib

    run_id = _run(ws)
    plan_run(ws, run_id, gpu="h200")
    record = json.loads((ws.run_dir(run_id) / "plan.json").read_text())
    text = (ws.run_dir(run_id) / "run.yaml").read_bytes()
    assert record["run_yaml_digest"] == "sha256:" + hashlib.sha256(text).hexdigest()


def test_approve_refuses_a_plan_that_records_no_run_yaml(ws: Workspace) -> None:
    """A plan.json of an earlier Kura (no digest) cannot say which run.yaml it planned."""
    run_id = _run(ws)
    plan_run(ws, run_id, gpu="h200")
    plan_json = ws.run_dir(run_id) / "plan.json"
    record = json.loads(plan_json.read_text())
    record["run_yaml_digest"] = ""
    plan_json.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    with pytest.raises(CheckFailed, match=r"records no run\.yaml digest"):
        approve_run(ws, run_id)


def test_launch_refuses_a_run_yaml_saved_after_approval_even_without_a_value_change(
    ws: Workspace,
) -> None:
    """The gate binds run.yaml's text, not only the values it parses to."""
    run_id = _run(ws)
    plan_run(ws, run_id, gpu="h200")
    approve_run(ws, run_id)
    path = ws.run_dir(run_id) / "run.yaml"
    original = path.read_text()
    path.write_text(original + "# edited after approval\n")
    with pytest.raises(CheckFailed, match="changed after approval") as refused:
        check_approval(ws, run_id)
    assert f"kura run plan {run_id}" in (refused.value.hint or "")
    path.write_text(original)
    check_approval(ws, run_id)
