"""`kura sweep launch SWEEP --workers N --gpu G --setup-script FILE`: sweep workers as
SkyPilot managed jobs, each running ``kura sweep worker`` against the sweep's PostgreSQL
study.

Before any task is written the sweep's approval is checked as a worker checks it (its own
files and every input its trials are made from, :func:`check_sweep_approval`); each
worker runs with ``--approval <sha256 of approval.json>`` and so refuses every trial once
the approval it was launched under is no longer the sweep's (:func:`check_approval_digest`):
one approval covers every worker's runs. A worker's machine gets the workspace and the
model files the approval binds uploaded to the same paths (so the bound paths hold there),
the person's setup script (installing Kura and the trainer), and the study's URL as a
SkyPilot secret: ``KURA_SWEEP_STORAGE`` is declared with no value in the task and handed
to ``sky jobs launch --secret`` from the launching process's environment, with
``PGPASSWORD`` when it is set. The URL (and its password) is never written to a file Kura
writes: not the tasks, not ``workers.json``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from kura.errors import CheckFailed, Unsupported, UsageError
from kura.fsutil import atomic_write_text
from kura.nextsteps import NextStep, next_list
from kura.sweep.records import SweepRecord, load_sweep, sweep_dir
from kura.workspace import Workspace

__all__ = [
    "STORAGE_SECRET",
    "SweepLaunch",
    "WorkerJob",
    "check_approval_digest",
    "launch_sweep_workers",
]

STORAGE_SECRET = "KURA_SWEEP_STORAGE"
PASSED_SECRETS = ("PGPASSWORD",)
"""Passed too when set here: libpq reads the password from it when the URL holds none."""
WORKERS_FOLDER = "workers"
_POSTGRES = ("postgresql", "postgres", "postgresql+psycopg")


@dataclass(frozen=True)
class WorkerJob:
    name: str
    seed: int
    task: str
    """The worker's sky-task.yaml, relative to the workspace."""


@dataclass(frozen=True)
class SweepLaunch:
    sweep: str
    gpu: str
    approval: str
    workers: tuple[WorkerJob, ...]
    next: tuple[NextStep, ...] = field(default=())

    kind: ClassVar[str] = "sweep-launch"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "sweep": self.sweep,
            "gpu": self.gpu,
            "approval": self.approval,
            "workers": [vars(w) for w in self.workers],
            "next": next_list(*self.next),
        }


def approval_digest(workspace: Workspace, sweep_id: str) -> str:
    from kura.sweep.envelope import APPROVAL

    path = sweep_dir(workspace, sweep_id) / APPROVAL
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def check_approval_digest(workspace: Workspace, sweep_id: str, expected: str) -> None:
    """CheckFailed unless the sweep's approval.json is the one a launch checked."""
    if approval_digest(workspace, sweep_id) != expected:
        raise CheckFailed(
            f"sweep {sweep_id}'s approval is not the one these workers were launched under "
            f"(sha256 {expected[:12]}…)",
            hint=f"stop these workers (`sky jobs cancel`), then `kura sweep launch {sweep_id}` "
            "again under the current approval",
        )


def launch_sweep_workers(
    workspace: Workspace,
    sweep_id: str,
    *,
    workers: int,
    gpu: str,
    setup_script: Path,
    storage_url: str | None = None,
) -> SweepLaunch:
    """Check the approval, write one task per worker, and submit each (``sky jobs launch``)."""
    from kura.sweep.envelope import check_sweep_approval

    sweep = load_sweep(workspace, sweep_id)
    url = _storage_url(sweep, storage_url)
    check_sweep_approval(workspace, sweep_id)
    digest = approval_digest(workspace, sweep_id)
    _refuse_nested_cloud(workspace, sweep)
    setup = setup_script.read_text(encoding="utf-8")
    if url in setup:
        raise UsageError(
            f"{setup_script} holds the study's URL, which would be written into every task",
            hint=f"take it out: the workers read it from the {STORAGE_SECRET} secret",
        )
    secrets = [STORAGE_SECRET, *(name for name in PASSED_SECRETS if os.environ.get(name))]
    jobs = [
        _write_worker(workspace, sweep, number, gpu=gpu, setup=setup, approval=digest,
                      secrets=secrets)
        for number in range(1, workers + 1)
    ]  # fmt: skip
    for job, path in jobs:
        _submit(job, path, secrets, url)
    launched = tuple(job for job, _ in jobs)
    _write_record(workspace, sweep_id, gpu, digest, launched)
    follow = NextStep(f"kura sweep status {sweep_id}", "trials as the workers report them")
    return SweepLaunch(sweep_id, gpu, digest, launched, (follow,))


def _storage_url(sweep: SweepRecord, given: str | None) -> str:
    from kura.sweep.storage import JOURNAL, redact

    if sweep.storage == JOURNAL:
        raise UsageError(
            f"sweep {sweep.id}'s study is a journal file on this machine, which workers on "
            "rented machines cannot share",
            hint="make the sweep with `kura sweep new … --storage postgresql://user@host/db` "
            "(a server every worker can reach)",
        )
    url = given or os.environ.get(STORAGE_SECRET) or sweep.storage
    if url.partition("://")[0] not in _POSTGRES or redact(url) != sweep.storage:
        raise UsageError(
            f"--storage {redact(url)!r} is not sweep {sweep.id}'s study ({sweep.storage})",
            hint=f"give the study's URL (with its password, if any) in ${STORAGE_SECRET} or "
            "--storage",
        )
    return url


def _refuse_nested_cloud(workspace: Workspace, sweep: SweepRecord) -> None:
    from kura.execution.executors import executor_class
    from kura.runs.store import read_run

    spec = read_run(workspace, sweep.base_run)
    if executor_class(spec.execution.executor).remote:
        raise UsageError(
            f"base run {sweep.base_run} launches with SkyPilot: each worker would rent another "
            "machine per trial",
            hint=f"set execution.executor to host or docker in runs/{sweep.base_run}/run.yaml "
            "(the trials run on the worker's machine), then plan and approve the sweep again",
        )


def _write_worker(
    workspace: Workspace,
    sweep: SweepRecord,
    number: int,
    *,
    gpu: str,
    setup: str,
    approval: str,
    secrets: list[str],
) -> tuple[WorkerJob, Path]:
    from kura.execution.executors.skypilot import sweep_worker_task
    from kura.runs.cloud import sky_accelerator
    from kura.yamlio import write_yaml

    name = f"kura-sweep-{sweep.id}-w{number}"
    seed = int.from_bytes(hashlib.sha256(f"{sweep.id}:{number}".encode()).digest()[:4], "big")
    root = str(workspace.root)
    argv = [
        "kura", "-w", root, "sweep", "worker", sweep.id, "--gpu", gpu, "--seed", str(seed),
        "--approval", approval, "--storage", f"${STORAGE_SECRET}",
    ]  # fmt: skip
    task = sweep_worker_task(
        name=name,
        accelerator=sky_accelerator(gpu),
        settings=workspace.config().skypilot,
        uploads=[root, *_bound_model_files(workspace, sweep.id)],
        setup=setup,
        worker_argv=argv,
        cwd=root,
        secrets=secrets,
    )
    path = sweep_dir(workspace, sweep.id) / WORKERS_FOLDER / f"w{number}.sky-task.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_yaml(path, task)
    return WorkerJob(name, seed, str(path.relative_to(workspace.root))), path


def _bound_model_files(workspace: Workspace, sweep_id: str) -> list[str]:
    """The model files (and shards) the sweep's approval binds, outside the workspace."""
    from kura.schema.lock import LockedModels
    from kura.schema.machine import read_machine_file
    from kura.sweep.envelope import APPROVAL, SweepApproval

    record = read_machine_file(
        SweepApproval, sweep_dir(workspace, sweep_id) / APPROVAL, remedy="approve it again"
    )
    models = LockedModels.model_validate((record.inputs or {})["models"])
    paths = {
        path
        for role in models.roles.values()
        for path in [role.path, *(shard.path for shard in role.shards)]
        if path is not None
    }
    inside = str(workspace.root).rstrip("/") + "/"
    return sorted(p for p in paths if not p.startswith(inside))


def _submit(job: WorkerJob, task_path: Path, secrets: list[str], url: str) -> None:
    import shutil

    from kura.execution.executors.skypilot import sky_worker_launch_argv

    argv = sky_worker_launch_argv(job.name, secrets, task_path)
    if shutil.which(argv[0]) is None:
        raise Unsupported(
            "SkyPilot's `sky` command is not on PATH",
            hint="install it with `pip install skypilot` (plus your cloud's extra) and run "
            "`sky check`",
        )
    env = {**os.environ, STORAGE_SECRET: url}  # read by `--secret`, never written
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CheckFailed(
            f"`sky jobs launch` of worker {job.name} failed ({done.returncode}): "
            + done.stderr.strip()[-600:].replace(url, "<storage URL>"),
            hint="fix what SkyPilot says, then launch again (workers already started keep "
            "running: `sky jobs queue`)",
        )


def _write_record(
    workspace: Workspace, sweep_id: str, gpu: str, digest: str, jobs: tuple[WorkerJob, ...]
) -> None:
    import json

    doc = {
        "kind": "sweep-workers",
        "sweep": sweep_id,
        "gpu": gpu,
        "approval": digest,
        "workers": [vars(job) for job in jobs],
    }
    path = sweep_dir(workspace, sweep_id) / WORKERS_FOLDER / "workers.json"
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")
