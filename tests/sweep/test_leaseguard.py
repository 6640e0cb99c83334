"""A trial's guard starts a third of a lease after the steps begin (the worker took the lease
just before the launch, so a trial shorter than that never starts one), then looks at the
study at once and every third of a lease."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from optuna.trial import TrialState

import kura.sweep.leaseguard as leaseguard
from kura.sweep.lease import LEASE_KEY
from kura.sweep.leaseguard import LeaseTarget, guard_argv, guard_for, watch


def _target(root: Path, lease: float) -> LeaseTarget:
    return LeaseTarget(
        workspace=root, sweep="s1", number=3, trial_id=7, storage="journal", lease_seconds=lease
    )


def test_a_workers_guard_starts_a_third_of_a_lease_after_the_steps(tmp_path: Path) -> None:
    target = _target(tmp_path, lease=60.0)
    guard = guard_for(target, "sweep s1 trial 3")
    assert guard.start_after_seconds == 20.0
    assert guard.argv == guard_argv(target)
    assert guard.owner == "sweep s1 trial 3"


def test_once_started_the_guard_looks_at_once_and_then_every_third_of_a_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    parents = iter([100, 100, 100, 1])  # the supervisor is gone after the second look
    live = SimpleNamespace(state=TrialState.RUNNING, user_attrs={LEASE_KEY: 4e9})

    class Study:
        def get_trial(self, trial_id: int) -> object:
            events.append(f"looked at trial {trial_id}")
            return live

    monkeypatch.setattr(leaseguard, "_open_storage", lambda target: Study())
    monkeypatch.setattr(leaseguard.os, "getppid", lambda: next(parents))
    monkeypatch.setattr(leaseguard.time, "sleep", lambda s: events.append(f"slept {s:g}"))
    assert watch(_target(tmp_path, lease=60.0)) is None
    assert events == ["looked at trial 7", "slept 20", "looked at trial 7", "slept 20"]
