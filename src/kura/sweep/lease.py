"""Leases: how a sweep notices a worker that died mid-trial, and re-queues its trial once.

Optuna's own heartbeat (``RDBStorage(heartbeat_interval=…)``) is tied to
``study.optimize()``; a worker that asks and tells, as Kura's does around a trainer
subprocess, gets none of it. So each claimed trial carries a lease in its user attributes:
``kura.lease_until`` (seconds since the epoch, this worker's clock), renewed every third of
the lease by a thread while the trial runs. Any worker (and ``kura sweep status``) reaps a
RUNNING trial whose lease ran out: it marks it FAIL, which the storage lets exactly one
caller do (a second gets ``UpdateFinishedTrialError``), records why, and, unless the trial
was itself a re-queue, enqueues its parameters again with ``kura.requeued_from``. A trial is
therefore re-queued at most once, and no trial number is ever run by two workers. Workers'
clocks are assumed to agree to well within a lease (NTP).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_LEASE_SECONDS", "Lease", "Reaped", "reap_stale"]

DEFAULT_LEASE_SECONDS = 60.0
LEASE_KEY = "kura.lease_until"


class Lease:
    """Renew one trial's lease on a thread of its own (with its own storage handle)."""

    def __init__(self, open_storage: Callable[[], Any], trial_id: int, seconds: float):
        self._open = open_storage
        self.trial_id = trial_id
        self.seconds = seconds
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kura-lease", daemon=True)

    def renew(self, storage: Any) -> None:
        storage.set_trial_user_attr(self.trial_id, LEASE_KEY, time.time() + self.seconds)

    def start(self, storage: Any) -> None:
        self.renew(storage)
        self._thread.start()

    def _run(self) -> None:
        from optuna.trial import TrialState

        storage = self._open()
        while not self._stop.wait(self.seconds / 3):
            try:
                if storage.get_trial(self.trial_id).state != TrialState.RUNNING:
                    self.lost.set()
                    return
                self.renew(storage)
            except Exception:  # a finished trial refuses attributes: the lease is gone
                self.lost.set()
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.seconds)


@dataclass(frozen=True)
class Reaped:
    number: int
    worker: str
    requeued: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "worker": self.worker,
            "requeued": self.requeued,
            "reason": self.reason,
        }


def reap_stale(
    study: Any,
    *,
    lease_seconds: float,
    now: float | None = None,
    on_reaped: Callable[[Any, str], None] | None = None,
) -> list[Reaped]:
    """FAIL every RUNNING trial whose lease ran out; re-queue each one once."""
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    moment = time.time() if now is None else now
    reaped = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        until = trial.user_attrs.get(LEASE_KEY)
        if until is None and trial.datetime_start is not None:
            until = trial.datetime_start.timestamp() + lease_seconds
        if until is None or float(until) > moment:
            continue
        worker = str(trial.user_attrs.get("kura.worker", "unknown worker"))
        first = trial.user_attrs.get("kura.requeued_from") is None
        reason = (
            f"worker {worker} stopped renewing its lease (last until "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(float(until)))})"
        )
        reason += (
            "; re-queued once" if first else "; it was already a re-queue: not re-queued again"
        )
        storage = study._storage
        try:
            # The reason first (a finished trial refuses attributes), then the one FAIL the
            # storage grants a single caller.
            storage.set_trial_user_attr(trial._trial_id, "kura.lost", reason)
            storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        except UpdateFinishedTrialError:
            continue  # another worker reaped it first, or it just finished
        if first:
            study.enqueue_trial(
                dict(trial.params),
                user_attrs={
                    "kura.requeued_from": trial.number,
                    "kura.source": trial.user_attrs.get("kura.source", "sampler"),
                },
            )
        if on_reaped is not None:
            on_reaped(trial, reason)
        reaped.append(Reaped(trial.number, worker, first, reason))
    return reaped
