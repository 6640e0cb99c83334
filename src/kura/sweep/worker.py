"""`kura sweep worker SWEEP`: ask for a trial, plan it for this GPU, run it, report, repeat.

Each worker has its own TPE sampler (``constant_liar=True`` so running trials are not
proposed twice, a distinct seed per worker, the memory gate's constraint per trial) and an
asynchronous successive-halving pruner over the followed loss. Before every trial it checks
the sweep's approval (with the base run and the datasets it binds), the study's space and
trainer release, the trial count and the budget, and reaps trials whose workers stopped
renewing their lease (re-queued once). GPU class,
host and seed are recorded on every trial; step times are only ever compared within one GPU
class (see the report).

With ``objective.mode: pareto`` the study has two objectives (loss, judge score): the follower
reports nothing to the study (a multi-objective trial takes no intermediate values), nothing
is pruned, and a finished trial whose judge gave no score is told failed, with status
``unscored`` and the reason, since Optuna cannot be told a missing objective value.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kura.errors import CheckFailed, KuraError, SpecError, Unsupported
from kura.fsutil import atomic_write_text
from kura.sweep.records import SweepRecord, TrialRecord, load_sweep, sweep_dir, trial_dir
from kura.sweep.values import Artifact, CacheNote
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.execution.supervisors import SupervisorStarter

__all__ = ["counted", "run_worker", "spent"]


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def counted(trials: list[Any]) -> int:
    """Trials that use up the approved count: finished or running ones, and failures the
    config itself caused; a lost trial that was re-queued is not counted twice."""
    from optuna.trial import TrialState

    used = 0
    for trial in trials:
        failed = trial.state == TrialState.FAIL
        lost_twice = "not re-queued again" in str(trial.user_attrs.get("kura.lost", ""))
        if trial.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING) or (
            failed and (trial.user_attrs.get("kura.counted") or lost_twice)
        ):
            used += 1
    return used


def spent(trials: list[Any]) -> tuple[float, float | None]:
    """(GPU-hours, USD) used so far: finished trials' records, running ones' elapsed time.

    USD is None (unknown, never 0) once a trial that used GPU time ran on a GPU class
    without a price: its dollars cannot be counted, so a dollar budget cannot be held."""
    from optuna.trial import TrialState

    hours = 0.0
    usd: float | None = 0.0
    now = time.time()
    for trial in trials:
        if trial.state == TrialState.RUNNING and trial.datetime_start is not None:
            used = (now - trial.datetime_start.timestamp()) / 3600
            price = trial.user_attrs.get("kura.usd_per_hour")
            cost = None if price is None else used * float(price)
        else:
            used = float(trial.user_attrs.get("kura.gpu_hours") or 0.0)
            cost = trial.user_attrs.get("kura.usd")
            if cost is None and not used:
                cost = 0.0  # it never ran (infeasible, refused): nothing was spent
        hours += used
        usd = None if usd is None or cost is None else usd + float(cost)
    return hours, usd


class _Worker:
    def __init__(
        self,
        workspace: Workspace,
        sweep: SweepRecord,
        *,
        gpu: str | None,
        storage_url: str | None,
        seed: int | None,
        lease_seconds: float,
        poll: float,
        approval: str | None = None,
        supervisors: SupervisorStarter | None = None,
    ) -> None:
        import optuna

        from kura.backends.registry import get_backend
        from kura.runs.gpu_choice import choose_gpu
        from kura.sweep.envelope import check_sweep_approval, checked_space
        from kura.sweep.study import check_resumable, load_study

        self.workspace = workspace
        self.sweep = sweep
        self.folder = sweep_dir(workspace, sweep.id)
        self.backend = get_backend(sweep.backend)
        self.space = checked_space(workspace, sweep, self.backend)
        self.approval = approval
        self.plan = check_sweep_approval(workspace, sweep.id)
        self._check_launched_approval()
        self.gpu_class, self.gpu_source = choose_gpu(gpu, None)
        self.host = socket.gethostname()
        self.worker = f"{self.host}:{os.getpid()}"
        self.seed = (
            seed
            if seed is not None
            else int.from_bytes(
                hashlib.sha256(f"{self.worker}:{time.time_ns()}".encode()).digest()[:4], "big"
            )
        )
        self.storage_url = storage_url or sweep.storage
        self.lease_seconds = lease_seconds
        self.poll = poll
        self.pareto = self.space.spec.objective.mode == "pareto"
        early = self.space.spec.early_stop
        pruner = (
            optuna.pruners.SuccessiveHalvingPruner(
                min_resource=early.min_resource, reduction_factor=early.reduction_factor
            )
            if early.enabled
            else optuna.pruners.NopPruner()
        )
        sampler = optuna.samplers.TPESampler(
            seed=self.seed,
            constant_liar=True,
            multivariate=True,
            n_startup_trials=min(10, max(2, self.plan.trials // 3)),
        )
        self.study = load_study(
            workspace, sweep, storage_url=self.storage_url, sampler=sampler, pruner=pruner
        )
        check_resumable(self.study, sweep, self.backend.release, self.space.spec.objective.mode)
        self.base_doc = self._base_document()
        offer = self.gpu_class.cheapest_offer()
        self.usd_per_hour = offer.usd_per_hour if offer else None
        self.supervisors = supervisors

    def _base_document(self) -> dict[str, Any]:
        """The base run's run.yaml, read again for every trial right after the approval
        check that bound its digest: a trial is made from the approved bytes."""
        from kura.plainyaml import read_yaml
        from kura.runs.store import read_run, run_file

        read_run(self.workspace, self.sweep.base_run)  # validated, as a trial's run must be
        return read_yaml(run_file(self.workspace, self.sweep.base_run))

    # -- the loop ------------------------------------------------------------------------

    def limits(self, first: bool) -> str | None:
        """Why no further trial may start (None: one may)."""
        trials = self.study.get_trials(deepcopy=False)
        if counted(trials) >= self.plan.trials:
            return f"all {self.plan.trials} approved trials are taken"
        hours, usd = spent(trials)
        budget = self.plan.budget
        if budget.usd is not None:
            self._check_priced(usd, budget.usd)
        over = None
        if budget.hours is not None and hours >= budget.hours:
            over = f"{hours:.3f} of {budget.hours} GPU-hours"
        if budget.usd is not None and usd is not None and usd >= budget.usd:
            over = f"${usd:.2f} of ${budget.usd}"
        if over is None:
            return None
        if first:
            raise CheckFailed(
                f"sweep {self.sweep.id}: the budget is spent ({over})",
                hint=f"raise it: `kura sweep plan {self.sweep.id} --budget-hours H` (or "
                f"--budget-usd D), then `kura sweep approve {self.sweep.id}`; the trials so "
                "far are kept",
            )
        return f"the budget is spent ({over})"

    def _check_priced(self, usd: float | None, budget_usd: float) -> None:
        """A dollar budget needs a price for every trial: one on a GPU class the catalog has
        no price for would count as $0 and the budget would never stop the sweep."""
        hint = (
            f"run workers on a priced GPU class (`kura gpus`; --gpu), or re-plan the sweep "
            f"with --budget-hours (`kura sweep plan {self.sweep.id} --budget-hours H`, then "
            f"`kura sweep approve {self.sweep.id}`)"
        )
        if self.usd_per_hour is None:
            raise CheckFailed(
                f"sweep {self.sweep.id} has a budget of ${budget_usd}, and this worker's GPU "
                f"class {self.gpu_class.id} has no price in the GPU catalog",
                hint=hint,
            )
        if usd is None:
            raise CheckFailed(
                f"sweep {self.sweep.id}: the dollars spent are unknown (a trial ran on a GPU "
                f"class without a price), so the budget of ${budget_usd} cannot be held",
                hint=hint,
            )

    def reap(self) -> list[dict[str, Any]]:
        from kura.sweep.lease import reap_stale

        return [
            r.to_dict()
            for r in reap_stale(
                self.study, lease_seconds=self.lease_seconds, on_reaped=self._reaped_here
            )
        ]

    def _maybe_reap(self) -> None:
        """While following a trial, reap lost ones too (every third of a lease), so a dead
        worker's trial is re-queued promptly and its orphan on this machine stopped."""
        now = time.monotonic()
        if now - self._last_reap >= self.lease_seconds / 3:
            self._last_reap = now
            self.reaped += self.reap()

    _last_reap = 0.0

    def _reaped_here(self, trial: Any, reason: str) -> None:
        """A lost trial of this machine: stop its orphaned run, mark its record lost."""
        from kura.execution.executors import cancel_run
        from kura.sweep.records import load_trials, write_trial

        if trial.user_attrs.get("kura.host") != self.host:
            return
        run_id = trial.user_attrs.get("kura.run_id")
        if run_id and (self.workspace.run_dir(run_id) / "state.json").exists():
            with contextlib.suppress(KuraError):
                cancel_run(self.workspace.run_dir(run_id), grace=5.0)
        for record in load_trials(self.workspace, self.sweep.id):
            if record.number == trial.number and record.status == "running":
                write_trial(
                    self.workspace,
                    record.updated(status="lost", reason=reason, finished_at=_now()),
                )

    def _check_launched_approval(self) -> None:
        """A worker launched for one approval (``--approval``, :mod:`kura.sweep.cloud`) runs
        trials only under that one."""
        from kura.sweep.cloud import check_approval_digest

        if self.approval is not None:
            check_approval_digest(self.workspace, self.sweep.id, self.approval)

    def run(self, max_trials: int | None) -> dict[str, Any]:
        from kura.sweep.envelope import check_sweep_approval

        done: list[dict[str, Any]] = []
        self.reaped: list[dict[str, Any]] = []
        stop = None
        first = True
        while stop is None:
            self.plan = check_sweep_approval(self.workspace, self.sweep.id)
            self._check_launched_approval()
            self.base_doc = self._base_document()
            self.reaped += self.reap()
            stop = self.limits(first)
            first = False
            if stop is not None:
                break
            if max_trials is not None and len(done) >= max_trials:
                stop = f"--max-trials {max_trials} reached"
                break
            trial = self.study.ask(self.space.distributions())
            if trial.number > self._last_allowed_number(trial.number):
                self._tell_fail(trial, "over the approved trial count", counted=False)
                stop = f"all {self.plan.trials} approved trials are taken"
                break
            done.append(self.run_trial(trial))
        return {
            "kind": "sweep-worker",
            "sweep": self.sweep.id,
            "worker": self.worker,
            "gpu_class": self.gpu_class.id,
            "seed": self.seed,
            "trials": done,
            "reaped": self.reaped,
            "stopped": stop,
        }

    def _last_allowed_number(self, mine: int) -> int:
        """Numbers are handed out in order: count the trials that use the approved count up
        to ``mine``; past the count, this trial is one too many."""
        trials = [t for t in self.study.get_trials(deepcopy=False) if t.number < mine]
        return mine if counted(trials) < self.plan.trials else -1

    def _tell_fail(self, trial: Any, reason: str, *, counted: bool) -> None:
        from optuna.trial import TrialState

        with contextlib.suppress(Exception):
            trial.set_user_attr("kura.reason", reason)
            if counted:
                trial.set_user_attr("kura.counted", True)
        with contextlib.suppress(Exception):
            self.study.tell(trial, state=TrialState.FAIL)

    # -- one trial -----------------------------------------------------------------------

    def run_trial(self, trial: Any) -> dict[str, Any]:
        from kura.sweep.lease import Lease
        from kura.sweep.storage import open_storage
        from kura.sweep.trials import trial_run_id

        params = {k: trial.params[k] for k in self.space.keys}
        source = str(trial.user_attrs.get("kura.source", "sampler (TPE)"))
        run_id = trial_run_id(self.sweep.id, trial.number)
        for key, value in {
            "kura.worker": self.worker,
            "kura.host": self.host,
            "kura.gpu_class": self.gpu_class.id,
            "kura.seed": self.seed,
            "kura.run_id": run_id,
            "kura.usd_per_hour": self.usd_per_hour,
        }.items():
            trial.set_user_attr(key, value)
        record = TrialRecord(
            sweep=self.sweep.id,
            number=trial.number,
            run_id=run_id,
            params=params,
            source=source,
            status="running",
            worker=self.worker,
            host=self.host,
            gpu_class=self.gpu_class.id,
            seed=self.seed,
            requeued_from=trial.user_attrs.get("kura.requeued_from"),
            started_at=_now(),
        )
        self._write(record)
        lease = Lease(
            lambda: open_storage(self.storage_url, self.folder),
            trial._trial_id,
            self.lease_seconds,
        )
        lease.start(self.study._storage)
        try:
            record = self._trial_body(trial, record, params, source, run_id, lease)
        except (SpecError, Unsupported) as exc:
            # the trainer's rules refuse this config: it used a trial, the sweep goes on
            record = record.updated(
                status="failed", reason=f"refused: {exc.message}", finished_at=_now()
            )
            self._tell_fail(trial, record.reason or "", counted=True)
        except BaseException as exc:
            reason = exc.message if isinstance(exc, KuraError) else f"{type(exc).__name__}: {exc}"
            record = record.updated(status="failed", reason=reason, finished_at=_now())
            self._write(record)
            self._tell_fail(trial, reason, counted=False)
            raise
        finally:
            lease.stop()
        self._write(record)
        return {
            "number": record.number,
            "run": run_id,
            "status": record.status,
            "objective": None if record.objective is None else record.objective.value,
        }

    def _write(self, record: TrialRecord) -> None:
        from kura.sweep.records import write_trial

        write_trial(self.workspace, record)

    def _trial_body(
        self,
        trial: Any,
        record: TrialRecord,
        params: dict[str, Any],
        source: str,
        run_id: str,
        lease: Any,
    ) -> TrialRecord:
        from optuna.trial import TrialState

        from kura.runs.approval import approve_run
        from kura.runs.launching import launch_run
        from kura.runs.plan import plan_run
        from kura.sweep.gate import CONSTRAINT_KEY, MEMORY_CONSTRAINT, gate
        from kura.sweep.trials import check_envelope, make_trial_run, trial_document

        document = trial_document(
            self.base_doc,
            self.sweep,
            params,
            run_id=run_id,
            gpu_class=self.gpu_class.id,
            source=source,
        )
        make_trial_run(self.workspace, document)
        plan = plan_run(self.workspace, run_id, gpu=self.gpu_class.id).to_dict()
        verdict = gate(plan, self.gpu_class.usable_gib)
        trial.set_user_attr(CONSTRAINT_KEY, verdict.constraint)
        trial.set_constraint(MEMORY_CONSTRAINT, verdict.constraint)
        trial.set_user_attr("kura.estimate", verdict.estimate.to_dict())
        record = record.updated(estimate=verdict.estimate)
        if not verdict.fits:
            trial.set_user_attr("kura.status", "infeasible")
            trial.set_user_attr("kura.reason", verdict.reason)
            self.study.tell(trial, state=TrialState.PRUNED)
            return record.updated(status="infeasible", reason=verdict.reason, finished_at=_now())
        check_envelope(self.workspace, run_id, document, params, frozenset(plan["applied"]))
        approve_run(self.workspace, run_id, via=f"sweep {self.sweep.id}")
        self._guard(trial, run_id)
        try:
            with contextlib.ExitStack() as held:
                cache, skip, pending = self._caches(run_id, held)
                launch_run(
                    self.workspace, run_id, detach=True, skip=skip, supervisors=self.supervisors
                )
                followed = self._follow(trial, run_id, lease, pending, held)
        finally:
            from kura.execution.guard import remove_guard

            remove_guard(self.workspace.run_dir(run_id))
        record = record.updated(cache=cache or self._cache_note)
        return self._finish(trial, record, run_id, followed)

    def _guard(self, trial: Any, run_id: str) -> None:
        """Hand the trial's run a guard on this trial's lease: if this worker dies, the
        run's own supervisor stops the trainer when the lease runs out (wherever it runs)."""
        from kura.execution.guard import write_guard
        from kura.sweep.leaseguard import STORAGE_ENV, LeaseTarget, guard_for
        from kura.sweep.storage import redact

        redacted = redact(self.storage_url)
        if redacted != self.storage_url:
            # the password reaches the supervisor and its guard, never argv or a trainer
            os.environ[STORAGE_ENV] = self.storage_url
        target = LeaseTarget(
            workspace=self.workspace.root,
            sweep=self.sweep.id,
            number=trial.number,
            trial_id=trial._trial_id,
            storage=redacted,
            lease_seconds=self.lease_seconds,
        )
        owner = f"sweep {self.sweep.id} trial {trial.number}, lease of {self.worker}"
        write_guard(self.workspace.run_dir(run_id), guard_for(target, owner))

    _cache_note: CacheNote | None = None

    def _caches(
        self, run_id: str, held: contextlib.ExitStack
    ) -> tuple[CacheNote | None, list[str], Any]:
        from kura.execution.executors import executor_class
        from kura.locking import hold_lock
        from kura.runs.launching import CONTAINER_RUN_DIR
        from kura.runs.store import read_run
        from kura.sweep.caches import cache_key, restore_cache, stored

        run_dir = self.workspace.run_dir(run_id)
        spec = read_run(self.workspace, run_id)
        in_container = executor_class(spec.execution.executor).in_container
        seen = CONTAINER_RUN_DIR if in_container else str(run_dir)
        key = cache_key(run_dir, seen)
        self._cache_note = None
        if key is None:
            return None, [], None
        if not stored(self.folder, key):
            lock = self.folder / "cache" / f"{key.short}.lock"
            lock.parent.mkdir(parents=True, exist_ok=True)
            held.enter_context(hold_lock(lock, timeout=24 * 3600))
        if stored(self.folder, key):
            held.close()
            return restore_cache(self.folder, key, run_dir), list(key.steps), None
        self._cache_note = CacheNote(key=key.digest, computed=tuple(key.steps))
        return None, [], key

    def _follow(
        self, trial: Any, run_id: str, lease: Any, pending: Any, held: contextlib.ExitStack
    ) -> Any:
        from kura.sweep.caches import store_cache
        from kura.sweep.follow import follow_trial

        run_dir = self.workspace.run_dir(run_id)
        waiting = [pending]

        def on_state(state: Any) -> None:
            self._maybe_reap()
            key = waiting[0]
            if key is None:
                return
            statuses = {s.name: s.status for s in state.steps}
            if all(statuses.get(name) == "succeeded" for name in key.steps):
                store_cache(self.folder, key, run_dir, run_id=run_id)
                waiting[0] = None
                held.close()
            elif state.is_terminal or any(statuses.get(n) == "failed" for n in key.steps):
                waiting[0] = None
                held.close()

        return follow_trial(
            run_dir,
            trial,
            progress=self.backend.progress,
            prune=self.space.spec.early_stop.enabled,
            lease_lost=lease.lost.is_set,
            on_state=on_state,
            poll=self.poll,
            report=not self.pareto,
        )

    def _finish(self, trial: Any, record: TrialRecord, run_id: str, followed: Any) -> TrialRecord:
        from optuna.trial import TrialState

        from kura.execution.state import read_state
        from kura.sweep.objective import score

        run_dir = self.workspace.run_dir(run_id)
        hours = followed.seconds / 3600
        usd = None if self.usd_per_hour is None else hours * self.usd_per_hour
        latest = followed.last
        update: dict[str, Any] = {
            "seconds": round(followed.seconds, 2),
            "seconds_per_step": getattr(latest, "seconds_per_step", None),
            "gpu_hours": hours,
            "usd": usd,
            "stopped": followed.stopped,
            "finished_at": _now(),
        }
        if followed.stopped is not None:
            atomic_write_text(
                run_dir / "sweep-stop.json", json.dumps(followed.stopped.to_dict(), indent=2) + "\n"
            )
        artifacts = self._artifacts(run_id, record.number)
        update["artifacts"] = artifacts
        if followed.status == "lost":
            update.update(status="lost", reason="this worker's lease was reaped")
            return record.updated(**update)
        attrs = {
            "kura.gpu_hours": hours,
            "kura.usd": usd,
            "kura.artifacts": [artifact.to_dict() for artifact in artifacts],
        }
        if followed.status == "pruned":
            update["status"] = "pruned"
            stopped = None if followed.stopped is None else followed.stopped.to_dict()
            self._set(trial, {**attrs, "kura.status": "pruned", "kura.stopped": stopped})
            self.study.tell(trial, state=TrialState.PRUNED)
            return record.updated(**update)
        if followed.status != "succeeded":
            diagnosis = read_state(run_dir).diagnosis or {}
            reason = f"{diagnosis.get('code', 'failed')}: {diagnosis.get('message', '')}".strip()
            update.update(status="failed", reason=reason)
            if diagnosis.get("code") == "cuda_oom":
                # the estimate said it fits and the trainer disagreed: teach the sampler
                from kura.sweep.gate import OOM_CONSTRAINT

                trial.set_constraint(OOM_CONSTRAINT, 1.0)
                self._set(trial, {**attrs, "kura.status": "oom", "kura.reason": reason})
                self.study.tell(trial, state=TrialState.PRUNED)
            else:
                self._set(trial, {**attrs, "kura.reason": reason, "kura.counted": True})
                self.study.tell(trial, state=TrialState.FAIL)
            return record.updated(**update)
        outputs = self.backend.outputs(run_dir)
        try:
            result = score(
                self.space.spec.objective,
                heldout_loss=getattr(latest, "validation_loss", None),
                train_loss=(latest.loss_ema if latest.loss_ema is not None else latest.loss)
                if latest is not None
                else None,
                run_dir=run_dir,
                samples=outputs.samples,
            )
        except CheckFailed as exc:
            update.update(status="failed", reason=exc.message)
            self._set(trial, {**attrs, "kura.reason": exc.message, "kura.counted": True})
            self.study.tell(trial, state=TrialState.FAIL)
            return record.updated(**update)
        if result.values is None:
            # pareto, and the judge gave no score: a multi-objective study cannot be told a
            # missing value, so the trial is told failed (it used its slot) and says why
            reason = f"unscored: {result.note}; a pareto study needs both values"
            update.update(status="unscored", reason=reason, objective=result.to_dict())
            self._set(
                trial,
                {
                    **attrs,
                    "kura.status": "unscored",
                    "kura.reason": reason,
                    "kura.objective": result.to_dict(),
                    "kura.counted": True,
                },
            )
            self.study.tell(trial, state=TrialState.FAIL)
            return record.updated(**update)
        update.update(status="complete", objective=result.to_dict())
        self._set(trial, {**attrs, "kura.status": "complete", "kura.objective": result.to_dict()})
        self.study.tell(trial, list(result.values))
        return record.updated(**update)

    @staticmethod
    def _set(trial: Any, attrs: dict[str, Any]) -> None:
        for key, value in attrs.items():
            trial.set_user_attr(key, value)

    def _artifacts(self, run_id: str, number: int) -> list[Artifact]:
        """Link the trial's LoRA, samples, logs and metrics under the sweep folder."""
        from kura.sweep.collect import gather_run

        return gather_run(
            self.workspace.run_dir(run_id),
            trial_dir(self.workspace, self.sweep.id, number) / "artifacts",
            self.backend.outputs(self.workspace.run_dir(run_id)),
            relative_to=self.folder,
        )


def run_worker(
    workspace: Workspace,
    sweep_id: str,
    *,
    gpu: str | None = None,
    storage_url: str | None = None,
    seed: int | None = None,
    max_trials: int | None = None,
    lease_seconds: float | None = None,
    poll: float = 0.2,
    approval: str | None = None,
) -> dict[str, Any]:
    from kura.execution.supervisors import ForkServer
    from kura.sweep.lease import DEFAULT_LEASE_SECONDS

    sweep = load_sweep(workspace, sweep_id)
    # every trial's supervisor is forked from one warm server (a trial's run starts without
    # Python's start-up); started first, it warms up while the worker opens the study
    with ForkServer() as supervisors:
        worker = _Worker(
            workspace,
            sweep,
            gpu=gpu,
            storage_url=storage_url,
            seed=seed,
            lease_seconds=lease_seconds or DEFAULT_LEASE_SECONDS,
            poll=poll,
            approval=approval,
            supervisors=supervisors,
        )
        return worker.run(max_trials)
