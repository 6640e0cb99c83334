"""A trial's guard looks at the study only after a third of a lease: the worker took the
lease just before the launch, so a trial shorter than that never loads the study's code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import kura.sweep.leaseguard as leaseguard
import kura.sweep.storage as storage
from kura.sweep.leaseguard import LeaseTarget, watch


def _target(root: Path, lease: float) -> LeaseTarget:
    return LeaseTarget(
        workspace=root, sweep="s1", number=3, trial_id=7, storage="journal", lease_seconds=lease
    )


def test_the_first_look_waits_a_third_of_a_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    parents = iter([100, 100, 1])  # the supervisor is gone after the first wait

    def opened(url: str, folder: Path) -> object:
        events.append("opened the study")
        raise AssertionError("opened before a third of a lease")

    monkeypatch.setattr(storage, "open_storage", opened)
    monkeypatch.setattr(leaseguard.os, "getppid", lambda: next(parents))
    monkeypatch.setattr(leaseguard.time, "sleep", lambda s: events.append(f"slept {s:g}"))
    assert watch(_target(tmp_path, lease=60.0)) is None
    assert events == ["slept 20"]


def test_a_guard_ended_before_its_first_look_never_imports_optuna_nor_pydantic(
    tmp_path: Path,
) -> None:
    probe = (
        "import itertools, json, os, pathlib, sys\n"
        "import kura.sweep.leaseguard as g\n"
        "target = g.LeaseTarget(workspace=pathlib.Path(sys.argv[1]), sweep='s1', number=3,"
        " trial_id=7, storage='journal', lease_seconds=0.6)\n"
        "real = os.getppid()\n"
        "said = itertools.chain([real, real], itertools.repeat(1))  # gone after the first wait\n"
        "g.os.getppid = lambda: next(said)\n"
        "print(json.dumps([g.watch(target), 'optuna' in sys.modules,"
        " 'pydantic' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(out.stdout) == [None, False, False]
