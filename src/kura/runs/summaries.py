"""What ``kura run list`` shows of each run.yaml, kept while that file is unchanged.

A sweep leaves hundreds of runs; parsing every run.yaml for each listing made the list cost
grow with the workspace (milliseconds a run even through libyaml). The few values the list
shows of a run.yaml (:class:`RunSummary`) are kept in one JSON file per workspace under
:func:`kura.constants.cache_dir` (``run-summaries/``; never in the workspace, which a
read-only command must not write), each with the stat of the run.yaml it came from: size,
``mtime_ns``, inode and ``ctime_ns`` (the stamp no user call can set back, as the stat and
digest caches key by). Any difference, a run.yaml that fails validation, or a cache file
written by another schema and the run.yaml is read again with the read-only loader.

The cache is derived data: a damaged or foreign cache file is discarded and rebuilt, and one
that cannot be written (a read-only or full cache folder) costs the next listing time, not
its answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from kura.constants import cache_dir
from kura.runs.results import RunSettings
from kura.runs.store import read_run, run_file
from kura.schema.run import RunSpec
from kura.workspace import Workspace

__all__ = ["SCHEMA", "RunSummary", "SummaryCache", "summary_of"]

SCHEMA = 1
"""Bumped whenever :func:`summary_of` changes what it takes from a run.yaml."""

StatKey = tuple[int, int, int, int]


@dataclass(frozen=True)
class RunSummary:
    """The values ``kura run list`` shows that come from run.yaml alone."""

    base: str
    task: str | None
    datasets: tuple[str, ...]
    settings: RunSettings

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "datasets": list(self.datasets)}

    @classmethod
    def from_json(cls, data: object) -> RunSummary:
        """The summary a cache entry holds; ``ValueError`` when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("not a mapping")
        settings = data["settings"]
        datasets = data["datasets"]
        if not isinstance(settings, dict) or not isinstance(datasets, list):
            raise ValueError("malformed summary")
        summary = cls(
            base=str(data["base"]),
            task=None if data["task"] is None else str(data["task"]),
            datasets=tuple(str(name) for name in datasets),
            settings=RunSettings(
                rank=int(settings["rank"]),
                learning_rate=float(settings["learning_rate"]),
                optimizer=str(settings["optimizer"]),
                effective_batch=int(settings["effective_batch"]),
                epochs=None if settings["epochs"] is None else int(settings["epochs"]),
            ),
        )
        if summary.to_json() != data:
            raise ValueError("summary holds other values than it reads as")
        return summary


def summary_of(spec: RunSpec) -> RunSummary:
    training = spec.training
    return RunSummary(
        base=spec.model.base,
        task=spec.task,
        datasets=tuple(d.name for d in spec.datasets),
        settings=RunSettings(
            rank=training.network.rank,
            learning_rate=training.learning_rate,
            optimizer=training.optimizer,
            effective_batch=training.effective_batch,
            epochs=training.epochs,
        ),
    )


def _stat_key(path: Path) -> StatKey | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)


class SummaryCache:
    """One workspace's run summaries; :meth:`summary` answers from the cache while a
    run.yaml is unchanged, :meth:`save` writes back what changed."""

    def __init__(
        self, path: Path, runs_dir: str, entries: dict[str, tuple[StatKey, RunSummary]]
    ) -> None:
        self.path = path
        self.runs_dir = runs_dir
        self._entries = entries
        self._changed = False

    @classmethod
    def for_workspace(cls, workspace: Workspace) -> SummaryCache:
        runs_dir = os.fspath(workspace.runs_dir.resolve())
        name = hashlib.sha256(runs_dir.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        path = cache_dir() / "run-summaries" / f"{name}.json"
        return cls(path, runs_dir, _read_entries(path, runs_dir))

    def summary(self, workspace: Workspace, run_id: str) -> RunSummary:
        """The run's summary; run.yaml is read (read-only loader) only when it changed
        since it was cached. A run.yaml that cannot be read raises as :func:`read_run`."""
        key = _stat_key(run_file(workspace, run_id))
        held = self._entries.get(run_id)
        if key is not None and held is not None and held[0] == key:
            return held[1]
        summary = summary_of(read_run(workspace, run_id))
        if key is not None and key == _stat_key(run_file(workspace, run_id)):
            self._entries[run_id] = (key, summary)
            self._changed = True
        return summary

    def keep_only(self, run_ids: set[str]) -> None:
        """Forget runs that are gone (a deleted run folder)."""
        for run_id in [r for r in self._entries if r not in run_ids]:
            del self._entries[run_id]
            self._changed = True

    def save(self) -> None:
        """Write the cache back when it changed; a folder that refuses the write leaves the
        old file (or none): the next listing reads those run.yaml files again."""
        if not self._changed:
            return
        from kura.fsutil import atomic_write_text

        document = {
            "schema": SCHEMA,
            "runs_dir": self.runs_dir,
            "runs": {
                run_id: {"stat": list(key), "summary": summary.to_json()}
                for run_id, (key, summary) in sorted(self._entries.items())
            },
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path, json.dumps(document, separators=(",", ":")))
        except OSError:
            return
        self._changed = False


def _read_entries(path: Path, runs_dir: str) -> dict[str, tuple[StatKey, RunSummary]]:
    """The cached entries of ``runs_dir``; none when the file is absent, damaged, of
    another schema or of another workspace (a hash collision)."""
    from kura.bounded import read_limited

    try:
        document = json.loads(read_limited(path, what="run summary cache"))
    except Exception:  # absent, unreadable, oversized or damaged: derived data, rebuilt
        return {}
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        return {}
    if document.get("runs_dir") != runs_dir or not isinstance(document.get("runs"), dict):
        return {}
    entries: dict[str, tuple[StatKey, RunSummary]] = {}
    for run_id, entry in document["runs"].items():
        try:
            stat = entry["stat"]
            if not (isinstance(stat, list) and len(stat) == 4):
                raise ValueError("malformed stat")
            key = (int(stat[0]), int(stat[1]), int(stat[2]), int(stat[3]))
            entries[str(run_id)] = (key, RunSummary.from_json(entry["summary"]))
        except (KeyError, TypeError, ValueError):
            return {}
    return entries
