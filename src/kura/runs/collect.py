"""`kura run collect RUN`: copy a SkyPilot run's outputs back from its bucket, digest-checked.

A SkyPilot job writes its LoRA files, samples, logs and metrics into bucket folders mounted
at the run's writable mounts (``sky-task.yaml``'s ``file_mounts`` with ``mode: MOUNT``), and
when its steps end it writes ``.kura-sha256`` into each folder (``sha256sum`` lines,
:mod:`kura.execution.executors.skypilot`). Collect reads the launched task for each folder's
bucket URL and ``compiled/container.json`` for the run folder it belongs in, copies each
bucket folder into a staging folder through a :class:`BucketTransport`, checks every file
against the manifest (none missing, none changed, none unlisted), and only then moves the
files into the run folder.

The transport is the seam: :class:`CloudCliTransport` runs the cloud's own sync command
(``aws s3 sync``, ``gsutil -m rsync -r``); :class:`FolderTransport` reads a local folder laid
out like the buckets (a stand-in for tests, or a bucket mounted on this machine).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import ClassVar, Protocol

from kura.errors import CheckFailed, Unsupported, UsageError
from kura.nextsteps import NextStep, next_list
from kura.workspace import Workspace

__all__ = [
    "BucketTransport",
    "CloudCliTransport",
    "CollectReport",
    "CollectedFolder",
    "FolderTransport",
    "collect_outputs",
]

STAGING = ".collect"
_LINE = re.compile(r"^([0-9a-f]{64})  (.+)$")


class BucketTransport(Protocol):
    """Copies every object under a bucket URL into a local folder (keys relative to it)."""

    def download(self, url: str, dest: Path) -> None: ...


@dataclass(frozen=True)
class FolderTransport:
    """``scheme://bucket/path`` read from ``root/path``, ``root`` the bucket's folder: a
    bucket mounted on this machine, or a local stand-in for one (tests)."""

    root: Path

    def download(self, url: str, dest: Path) -> None:
        _, _, rest = url.partition("://")
        _, _, path = rest.partition("/")
        source = self.root / path
        if not source.is_dir():
            raise CheckFailed(
                f"{url} holds nothing (looked in {source})",
                hint="check that the job ran and wrote its outputs, then collect again",
            )
        shutil.copytree(source, dest, dirs_exist_ok=True)


@dataclass(frozen=True)
class CloudCliTransport:
    """The cloud's own sync command, run with Kura's environment (its credentials)."""

    def argv(self, url: str, dest: Path) -> list[str]:
        scheme = url.partition("://")[0]
        if scheme == "s3":
            return ["aws", "s3", "sync", url, str(dest), "--only-show-errors"]
        if scheme == "gs":
            return ["gsutil", "-m", "-q", "rsync", "-r", url, str(dest)]
        raise Unsupported(
            f"collecting from a {scheme}:// bucket is not supported yet",
            hint="copy the bucket folder into the run folder with the cloud's own tools, or "
            "mount the bucket here and collect with --from-folder MOUNTPOINT",
        )

    def download(self, url: str, dest: Path) -> None:
        argv = self.argv(url, dest)
        if shutil.which(argv[0]) is None:
            raise Unsupported(
                f"`{argv[0]}` is not on PATH: it copies {url} back",
                hint=f"install the cloud's CLI ({argv[0]}) and its credentials, then collect again",
            )
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise CheckFailed(
                f"`{' '.join(argv[:3])} …` failed ({done.returncode}): "
                + done.stderr.strip()[-800:],
                hint="check the bucket URL in sky-task.yaml and your cloud credentials",
            )


@dataclass(frozen=True)
class CollectedFolder:
    target: str
    url: str
    local: str
    files: int
    bytes: int


@dataclass(frozen=True)
class CollectReport:
    run: str
    folders: tuple[CollectedFolder, ...]
    next: tuple[NextStep, ...] = field(default=())

    kind: ClassVar[str] = "run-collect"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "run": self.run,
            "folders": [vars(f) for f in self.folders],
            "next": next_list(*self.next),
        }


def collect_outputs(
    workspace: Workspace,
    run_id: str,
    *,
    transport: BucketTransport | None = None,
    only: tuple[str, ...] = (),
) -> CollectReport:
    """Copy the run's bucket folders (``only`` those named, e.g. ``output``) into its folder."""
    run_dir = workspace.run_dir(run_id)
    folders = _bucket_folders(workspace, run_id)
    unknown = sorted(set(only) - {PurePosixPath(t).name for t in folders})
    if unknown:
        raise UsageError(
            f"run {run_id} has no bucket folder {', '.join(unknown)}",
            hint="name one of " + ", ".join(sorted(PurePosixPath(t).name for t in folders)),
        )
    chosen = {t: v for t, v in folders.items() if not only or PurePosixPath(t).name in only}
    mover = transport or CloudCliTransport()
    done = [
        _collect_folder(run_dir, target, url, local, mover)
        for target, (url, local) in sorted(chosen.items())
    ]
    shutil.rmtree(run_dir / STAGING, ignore_errors=True)
    follow = NextStep(f"kura run status {run_id}", "the outcome, read from the collected logs")
    return CollectReport(run_id, tuple(done), (follow,))


def _bucket_folders(workspace: Workspace, run_id: str) -> dict[str, tuple[str, Path]]:
    """Writable mount target → (its bucket URL in the launched task, its run folder)."""
    from kura.execution.executors.skypilot import TASK_FILE
    from kura.runs.compile import COMPILED_DIR, CONTAINER_NAME
    from kura.schema.compiled import ContainerSpec
    from kura.schema.machine import read_machine_file
    from kura.yamlio import load_yaml

    run_dir = workspace.run_dir(run_id)
    task_path = run_dir / TASK_FILE
    if not task_path.is_file():
        raise UsageError(
            f"run {run_id} has no {TASK_FILE}: it was not launched with SkyPilot",
            hint="collect applies to SkyPilot runs; a local run's outputs are already in "
            f"runs/{run_id}/output",
        )
    mounts = load_yaml(task_path).get("file_mounts") or {}
    urls = {
        str(target): str(value["source"])
        for target, value in mounts.items()
        if isinstance(value, dict) and value.get("mode") == "MOUNT"
    }
    remedy = f"run `kura run plan {run_id}` again"
    container = read_machine_file(
        ContainerSpec, run_dir / COMPILED_DIR / CONTAINER_NAME, remedy=remedy
    )
    local = {m.target: m.source for m in container.mounts if not m.read_only and m.source}
    missing = sorted(set(urls) - set(local))
    if missing:
        raise CheckFailed(
            f"{TASK_FILE} mounts {', '.join(missing)}, which compiled/{CONTAINER_NAME} does "
            "not name: the task and the compiled run disagree",
            hint=f"collect with the cloud's own tools, or {remedy} and launch again",
        )
    return {target: (url, Path(str(local[target]))) for target, url in urls.items()}


def _collect_folder(
    run_dir: Path, target: str, url: str, local: Path, transport: BucketTransport
) -> CollectedFolder:
    from kura.execution.executors.skypilot import MANIFEST

    staging = run_dir / STAGING / PurePosixPath(target).name
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    transport.download(url, staging)
    manifest = staging / MANIFEST
    if not manifest.is_file():
        raise CheckFailed(
            f"{url} has no {MANIFEST}: the job has not finished, or was killed before it "
            "wrote the manifest",
            hint="wait until `kura run status` says it ended, then collect again",
        )
    expected = _read_manifest(manifest, url)
    found = {
        p.relative_to(staging).as_posix()
        for p in staging.rglob("*")
        if p.is_file() and p != manifest
    }
    _check_files(url, expected, found, staging)
    size = 0
    for name in sorted(expected):
        source, dest = staging / name, local / name
        size += source.stat().st_size
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, dest)
    return CollectedFolder(target, url, str(local), len(expected), size)


def _read_manifest(path: Path, url: str) -> dict[str, str]:
    """``sha256sum`` lines (``HEX  ./name``) → name → hex; a name sha256sum had to escape
    (a newline or backslash in it) is refused, as is any name that leaves the folder."""
    entries: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _LINE.match(line)
        name = PurePosixPath(match.group(2)) if match else None
        if match is None or name is None or name.is_absolute() or ".." in name.parts:
            raise CheckFailed(
                f"{url}/{path.name} line {number} is not a sha256sum line of a file in the "
                f"folder: {line[:120]!r}",
                hint="rename files whose names hold a newline or backslash, or copy by hand",
            )
        entries[name.as_posix()] = match.group(1)
    return entries


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_files(url: str, expected: dict[str, str], found: set[str], staging: Path) -> None:
    missing = sorted(set(expected) - found)
    extra = sorted(found - set(expected))
    changed = sorted(
        name for name in set(expected) & found if _sha256(staging / name) != expected[name]
    )
    problems = [
        f"{label}: {', '.join(names[:8])}"
        for label, names in (
            ("missing", missing),
            ("changed", changed),
            ("not in the manifest", extra),
        )
        if names
    ]
    if problems:
        raise CheckFailed(
            f"{url} does not match its manifest (" + "; ".join(problems) + "); nothing was moved "
            "into the run folder",
            hint="collect again (a copy cut short); if it persists, the bucket changed after "
            "the job ended",
        )
