"""Datasets registered in a workspace: ``datasets/<name>/dataset.yaml``.

``add`` copies a folder of media and captions into the workspace (or, with ``link``, records
a pointer to it), inspects it and stores the facts. ``set`` records intent. ``validate``
re-inspects and says whether training would break. Inspection itself lives in
:mod:`kura.dataset.inspect`; this module only connects it to the workspace files.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from kura.dataset.sourcecheck import check_source, printable_name, undecodable
from kura.errors import InvalidInput, NotFound, UsageError
from kura.fsutil import atomic_write_text
from kura.nextsteps import NextStep, next_list
from kura.schema.base import load_spec, parse_value, read_spec, set_dotted, validate_spec
from kura.schema.dataset import BucketFact, DatasetFacts, DatasetIntent, DatasetSpec, TriggerFact
from kura.schema.inspection import InspectionFile
from kura.schema.machine import (
    machine_text,
    parse_machine_text,
    read_machine_file,
    write_machine_file,
)
from kura.workspace import Workspace, check_name
from kura.yamlio import dump_yaml, parse_yaml, write_yaml

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from kura.dataset.inspection import Inspection

__all__ = [
    "DatasetAdded",
    "DatasetChecked",
    "DatasetInspection",
    "DatasetList",
    "DatasetListEntry",
    "DatasetSet",
    "DatasetSnapshot",
    "add_dataset",
    "inspect_snapshot",
    "inspect_target",
    "list_datasets",
    "load_dataset",
    "read_dataset_snapshot",
    "set_dataset_values",
    "validate_dataset",
    "validate_snapshot",
]

SPEC_NAME = "dataset.yaml"
INSPECTION_NAME = "inspection.json"
SETTABLE_ROOTS = ("intent", "caption_ext", "control")


@dataclass(frozen=True)
class DatasetAdded:
    name: str
    folder: str
    linked: bool
    copied_files: int
    inspection: dict[str, Any]
    followed_links: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "dataset-add",
            "name": self.name,
            "folder": self.folder,
            "linked": self.linked,
            "copied_files": self.copied_files,
            "followed_links": self.followed_links,
            "inspection": self.inspection,
            "next": _after_add(self.name, self.inspection),
        }


@dataclass(frozen=True)
class DatasetChecked:
    name: str
    ok: bool
    blocking: list[dict[str, Any]]
    warnings: list[dict[str, Any]]
    digest: str
    counts: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    """File label → content sha256 (what the digest covers); not in the JSON document."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "dataset-validation",
            "name": self.name,
            "ok": self.ok,
            "digest": self.digest,
            "counts": self.counts,
            "blocking": self.blocking,
            "warnings": self.warnings,
            "next": next_list(
                NextStep(f"kura run new --dataset {self.name} --base BUNDLE", "it is ready")
                if self.ok
                else NextStep(
                    f"kura dataset validate {self.name}",
                    f"fix the {len(self.blocking)} blocking problem(s) listed (each with its "
                    "fix), then validate again",
                )
            ),
        }


@dataclass(frozen=True)
class DatasetSet:
    """``kura dataset set``: the values ``changed`` in dataset.yaml (by their dotted key)
    and the dataset's intent after them."""

    name: str
    changed: Mapping[str, object]
    intent: DatasetIntent
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "dataset-set"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "name": self.name,
            "changed": dict(self.changed),
            "intent": self.intent.model_dump(),
            "next": next_list(*self.next),
        }


class TrainerBucketsView(Protocol):
    """A run's view of a dataset's buckets, from the layer above (``kura.runs.buckets``)."""

    def to_dict(self) -> dict[str, object]: ...


@dataclass(frozen=True)
class DatasetInspection:
    """``kura dataset inspect``: the inspection of a registered dataset (``name``, its
    ``intent``, and only the ``questions`` that intent leaves open) or of a folder by path
    (``name`` and ``intent`` None, the inspection's own questions)."""

    inspection: Inspection
    name: str | None = None
    intent: DatasetIntent | None = None
    questions: tuple[Mapping[str, Any], ...] | None = None
    next: tuple[NextStep, ...] = ()
    trainer_buckets: TrainerBucketsView | None = None
    """With ``--run``: the dataset's buckets as that run's trainer makes them (the runs
    layer's ``RunBuckets``; the dataset layer only renders it)."""

    kind: ClassVar[str] = "dataset-inspection"

    def to_dict(self) -> dict[str, object]:
        document: dict[str, object] = dict(self.inspection.to_dict())
        if self.name is not None:
            document["name"] = self.name
        if self.intent is not None:
            document["intent"] = self.intent.model_dump()
        if self.questions is not None:
            document["questions"] = [dict(question) for question in self.questions]
        if self.trainer_buckets is not None:
            document["trainer_buckets"] = self.trainer_buckets.to_dict()
        document["next"] = next_list(*self.next)
        return document


@dataclass(frozen=True)
class DatasetListEntry:
    """One registered dataset with its stored facts (None where it was never inspected)."""

    name: str
    media: str
    linked: bool
    intent: DatasetIntent
    counts: Mapping[str, int] | None
    digest: str | None
    blocking_problems: int | None

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "media": self.media,
            "linked": self.linked,
            "intent": self.intent.model_dump(),
            "counts": None if self.counts is None else dict(self.counts),
            "digest": self.digest,
            "blocking_problems": self.blocking_problems,
        }


@dataclass(frozen=True)
class DatasetList:
    """``kura dataset list``: every registered dataset, by name."""

    datasets: tuple[DatasetListEntry, ...]
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "dataset-list"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "datasets": [item.to_dict() for item in self.datasets],
            "next": next_list(*self.next),
        }


def _after_add(name: str, inspection: dict[str, Any]) -> list[dict[str, str]]:
    """Answer the inspection's questions first, then validate."""
    keys = [q["key"] for q in inspection.get("questions") or [] if q.get("key")]
    return next_list(
        NextStep(
            f"kura dataset set {name} " + " ".join(f"{k}=…" for k in keys),
            "record what only a person can answer (the inspection's questions)",
        )
        if keys
        else None,
        NextStep(f"kura dataset validate {name}", "exit 1 lists what would break training"),
    )


def spec_path(workspace: Workspace, name: str) -> Path:
    return workspace.dataset_dir(name) / SPEC_NAME


def load_dataset(workspace: Workspace, name: str) -> tuple[DatasetSpec, Any]:
    """The validated spec and its round-trip document (for a command that edits it);
    NotFound names the known datasets."""
    path = _existing_spec(workspace, name)
    spec, document = load_spec(DatasetSpec, path)
    _check_name(spec, name, path)
    return spec, document


@dataclass(frozen=True)
class DatasetSnapshot:
    """One dataset as a command read it, once: dataset.yaml's text and spec, and the stored
    inspection report (its text, to tell an unchanged one without reading it again)."""

    text: str
    spec: DatasetSpec
    folder: Path
    inspection_text: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def inspection(self) -> InspectionFile | None:
        if self.inspection_text is None:
            return None
        return parse_machine_text(
            InspectionFile,
            self.inspection_text,
            self.folder / INSPECTION_NAME,
            remedy=f"run `kura dataset inspect {self.spec.name}` to write it again",
        )


def read_dataset_snapshot(workspace: Workspace, name: str) -> DatasetSnapshot:
    """dataset.yaml and inspection.json of ``name``, each opened once."""
    from kura.bounded import decode_utf8, read_limited
    from kura.plainyaml import parse_plain_yaml
    from kura.yamlio import MAX_YAML_BYTES

    path = _existing_spec(workspace, name)
    text = decode_utf8(read_limited(path, limit=MAX_YAML_BYTES, what="YAML file"), path)
    spec = validate_spec(DatasetSpec, parse_plain_yaml(text, source=str(path)), source=path)
    _check_name(spec, name, path)
    report = workspace.dataset_dir(name) / INSPECTION_NAME
    stored = None
    if report.is_file():
        # damaged bytes stay damaged text: they match no report, so inspect writes it again
        stored = read_limited(report, what="JSON file").decode("utf-8", errors="replace")
    return DatasetSnapshot(text=text, spec=spec, folder=report.parent, inspection_text=stored)


def read_dataset(workspace: Workspace, name: str) -> DatasetSpec:
    """The validated spec, for a command that only reads it (the fast YAML reader)."""
    path = _existing_spec(workspace, name)
    spec = read_spec(DatasetSpec, path)
    _check_name(spec, name, path)
    return spec


def _existing_spec(workspace: Workspace, name: str) -> Path:
    path = spec_path(workspace, name)
    if not path.is_file():
        known = sorted(
            p.parent.name
            for p in workspace.datasets_dir.glob(f"*/{SPEC_NAME}")
            if not p.parent.name.startswith(".")
        )
        raise NotFound(
            f"no dataset named {name!r} in {workspace.root}",
            hint=(f"known datasets: {', '.join(known)}" if known else "none registered yet")
            + "; add one with `kura dataset add NAME PATH`",
        )
    return path


def _check_name(spec: DatasetSpec, name: str, path: Path) -> None:
    if spec.name != name:
        raise InvalidInput(
            f"{path} says name: {spec.name!r} but lives in the folder for {name!r}",
            hint=f"set `name: {name}` in that file",
            path=path,
        )


def media_dir(workspace: Workspace, spec: DatasetSpec) -> Path:
    return _resolve_in(workspace.dataset_dir(spec.name), spec.media)


def control_dir(workspace: Workspace, spec: DatasetSpec) -> Path | None:
    if spec.control is None:
        return None
    return _resolve_in(workspace.dataset_dir(spec.name), spec.control)


def _resolve_in(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def add_dataset(
    workspace: Workspace,
    name: str,
    source: Path,
    *,
    link: bool = False,
    caption_ext: str = ".txt",
    control: Path | None = None,
    resolution: tuple[int, int] = (1024, 1024),
    progress: Callable[[int, int], None] | None = None,
    follow_links: bool = False,
) -> DatasetAdded:
    """Register ``source`` as dataset ``name``: copy (or link), inspect, write dataset.yaml.

    Everything (media, dataset.yaml, inspection.json) is built in a staging folder under
    ``.kura/staging/`` that no listing looks at, and becomes visible in one rename, made
    under the workspace lock after checking the name is still free. A crash at any moment
    leaves either no dataset or the whole one; a dead process's staging folder is removed
    by the next ``dataset add``."""
    check_name(name, "dataset")
    source = _existing_folder(source, "dataset")
    control = _existing_folder(control, "control") if control is not None else None
    followed = check_source(source, follow_links=follow_links)
    if control is not None:
        followed += [f"control/{rel}" for rel in check_source(control, follow_links=follow_links)]
    folder = workspace.dataset_dir(name)
    _refuse_taken(folder, name)
    spec = validate_spec(
        DatasetSpec,
        {
            "name": name,
            "media": str(source) if link else "media",
            "linked": link,
            "caption_ext": caption_ext,
            "control": (str(control) if link else "control") if control is not None else None,
        },
        source="the new dataset's settings",
    )
    staging = _new_staging(workspace, name)
    try:
        copied = 0
        if not link:
            copied += copy_media_tree(source, staging / "media")
            if control is not None:
                copied += copy_media_tree(control, staging / "control")
        document = _new_document(spec)
        write_yaml(staging / SPEC_NAME, document)
        inspection = _inspect_folder(staging, spec, resolution=resolution, progress=progress)
        report = _relocated(inspection.to_dict(), staging, folder)
        _store_inspection(staging, document, report)
        with workspace.lock():
            _refuse_taken(folder, name)
            os.rename(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _move_cached_facts(staging, folder)
    return DatasetAdded(
        name, workspace.relative(folder), link, copied, report, followed_links=followed
    )


def _refuse_taken(folder: Path, name: str) -> None:
    if folder.exists() or folder.is_symlink():
        raise UsageError(
            f"a dataset named {name!r} already exists ({folder})",
            hint=f"choose another name, or remove {folder} first",
        )


STAGING_DIR = "staging"


def _new_staging(workspace: Workspace, name: str) -> Path:
    """A fresh staging folder ``.kura/staging/NAME.PID.xxxx``, after removing those whose
    process has died (a killed ``dataset add``)."""
    root = workspace.state_dir / STAGING_DIR
    root.mkdir(parents=True, exist_ok=True)
    with workspace.lock():
        for leftover in root.iterdir():
            if not _owner_alive(leftover.name):
                shutil.rmtree(leftover, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{name}.{os.getpid()}.", dir=root))


def _owner_alive(staging_name: str) -> bool:
    parts = staging_name.split(".")
    pid = next((int(p) for p in reversed(parts[:-1]) if p.isdigit()), None)
    if pid is None:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _relocated(report: dict[str, Any], staging: Path, folder: Path) -> dict[str, Any]:
    """The report with the staging folder's paths replaced by the dataset's final ones."""
    old, new = str(staging), str(folder)

    def moved(value: str | None) -> str | None:
        if value is None or not (value == old or value.startswith(old + os.sep)):
            return value
        return new + value[len(old) :]

    report["root"] = moved(report["root"])
    report["settings"]["control_dir"] = moved(report["settings"].get("control_dir"))
    return report


def _move_cached_facts(staging: Path, folder: Path) -> None:
    """Re-key the stat cache's rows from the staging paths to the final ones (the files
    are the same inodes), so the next inspection reads nothing again."""
    with _open_cache() as cache:
        cache.move_prefix(staging, folder)


def _new_document(spec: DatasetSpec) -> Any:
    from kura.yamlio import parse_yaml

    data = spec.model_dump(exclude_none=True, exclude={"facts"})
    text = "# Kura dataset. `intent` is yours to edit (kura dataset set); `facts` is rewritten\n"
    text += "# by every `kura dataset inspect`.\n" + dump_yaml(data)
    return parse_yaml(text, source="dataset.yaml")


def copy_media_tree(source: Path, target: Path) -> int:
    """Copy regular files (not hidden, symlinked files resolved) without following symlinked
    folders, so a symlink loop cannot recurse. Returns the number of files copied."""
    count = 0
    for folder, dirs, files in os.walk(source, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        relative = Path(folder).relative_to(source)
        for file_name in sorted(files):
            if file_name.startswith("."):
                continue
            origin = Path(folder) / file_name
            if not origin.is_file():
                continue
            destination = target / relative / file_name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, destination)
            count += 1
    return count


def _existing_folder(path: Path, what: str) -> Path:
    path = path.expanduser()
    if not path.exists():
        raise NotFound(f"{what} folder {path} does not exist", hint="check the path", path=path)
    if not path.is_dir():
        raise InvalidInput(f"{path} is not a folder", hint=f"name the {what} folder", path=path)
    return path.resolve()


def _open_cache() -> Any:
    from kura.dataset.statcache import StatCache

    return StatCache.open()


def inspect_registered(
    workspace: Workspace,
    name: str,
    *,
    resolution: tuple[int, int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Inspection:
    """Inspect a registered dataset and store its facts (and the full report) beside it.

    Facts that did not change are not written again (nor the lock taken), so validate,
    inspect and plan work on a read-only workspace when the files are as last inspected."""
    snapshot = read_dataset_snapshot(workspace, name)
    inspection, _ = inspect_snapshot(workspace, snapshot, resolution=resolution, progress=progress)
    return inspection


def inspect_snapshot(
    workspace: Workspace,
    snapshot: DatasetSnapshot,
    *,
    resolution: tuple[int, int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Inspection, DatasetSnapshot]:
    """Inspect the dataset ``snapshot`` read and return it with the snapshot as it stands
    after: the same one when the facts did not change (nothing written), else the one
    written (dataset.yaml's facts and inspection.json, under the workspace lock)."""
    spec = snapshot.spec
    if resolution is None:
        width, height = (spec.facts.resolution * 2)[:2] if spec.facts else (1024, 1024)
        resolution = (width, height)
    folder = workspace.dataset_dir(spec.name)
    inspection = _inspect_folder(folder, spec, resolution=resolution, progress=progress)
    if _already_stored(snapshot, inspection.to_dict()):
        return inspection, snapshot
    with workspace.lock():
        # The file as it is under the lock (a person's edit since the snapshot is kept):
        # read again only on this path, where something changed and is written.
        _, document = load_dataset(workspace, spec.name)
        text, report = _store_inspection(folder, document, inspection.to_dict())
    updated = validate_spec(DatasetSpec, parse_yaml(text), source=folder / SPEC_NAME)
    return inspection, DatasetSnapshot(
        text=text, spec=updated, folder=folder, inspection_text=report
    )


def _inspect_folder(
    folder: Path,
    spec: DatasetSpec,
    *,
    resolution: tuple[int, int],
    progress: Callable[[int, int], None] | None,
) -> Inspection:
    from kura.dataset.inspect import inspect_dataset

    control = _resolve_in(folder, spec.control) if spec.control is not None else None
    with _open_cache() as cache:
        return inspect_dataset(
            _resolve_in(folder, spec.media),
            caption_ext=spec.caption_ext,
            control_dir=control,
            resolution=resolution,
            cache=cache,
            progress=progress,
            trigger=spec.intent.trigger,
        )


def _already_stored(snapshot: DatasetSnapshot, report: dict[str, Any]) -> bool:
    """Whether dataset.yaml's facts (all but the time they were taken) and inspection.json,
    as ``snapshot`` read them, already say what ``report`` says."""
    spec = snapshot.spec
    if spec.facts is None:
        return False
    facts = facts_from_report(report).model_copy(update={"inspected_at": spec.facts.inspected_at})
    if facts != spec.facts:
        return False
    text = machine_text(InspectionFile.model_validate_json(json.dumps(report)))
    return snapshot.inspection_text == text


def _store_inspection(folder: Path, document: Any, report: dict[str, Any]) -> tuple[str, str]:
    """Write the facts into ``folder``'s dataset.yaml and the full report beside it; the
    texts written (dataset.yaml's, inspection.json's)."""
    path = folder / SPEC_NAME
    document["facts"] = facts_from_report(report).model_dump(exclude_none=True)
    validate_spec(DatasetSpec, document, source=path)
    text = dump_yaml(document)
    atomic_write_text(path, text)
    stored = write_machine_file(
        folder / INSPECTION_NAME, InspectionFile.model_validate_json(json.dumps(report))
    )
    return text, stored


def load_inspection(workspace: Workspace, name: str) -> InspectionFile:
    """The stored report of dataset ``name``'s last inspection."""
    path = workspace.dataset_dir(name) / INSPECTION_NAME
    if not path.is_file():
        raise InvalidInput(
            f"dataset {name} has no inspection report ({path})",
            hint=f"run `kura dataset inspect {name}`",
            path=path,
        )
    return read_machine_file(
        InspectionFile, path, remedy=f"run `kura dataset inspect {name}` to write it again"
    )


def facts_from_report(report: dict[str, Any]) -> DatasetFacts:
    from kura.dataset.inspect import BLOCKING_CODES

    problems: dict[str, int] = {}
    for problem in report["problems"]:
        problems[problem["code"]] = problems.get(problem["code"], 0) + 1
    suggestion = report.get("task_suggestion") or {}
    return DatasetFacts(
        digest=report["digest"],
        inspected_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        resolution=list(report["resolution"]),
        counts=dict(report["counts"]),
        buckets=[
            BucketFact(width=b["width"], height=b["height"], count=b["count"])
            for b in report["buckets"]
        ],
        trigger=_trigger_fact(report.get("trigger")),
        task_suggestion=suggestion.get("task"),
        problems=dict(sorted(problems.items())),
        blocking_problems=sum(n for code, n in problems.items() if code in BLOCKING_CODES),
    )


def _trigger_fact(trigger: dict[str, Any] | None) -> TriggerFact | None:
    if not trigger:
        return None
    return TriggerFact(word=trigger["word"], count=trigger["count"], total=trigger["total"])


def open_questions(spec: DatasetSpec, report: dict[str, Any]) -> list[dict[str, Any]]:
    """The inspection's questions, less those the intent already answers (never asked twice)."""
    answered = {f"intent.{k}" for k, v in spec.intent.model_dump().items() if v is not None}
    return [q for q in report.get("questions", []) if q.get("key") not in answered]


def inspect_target(
    workspace_finder: Callable[[], Workspace],
    target: str,
    *,
    resolution: tuple[int, int] | None,
    progress: Callable[[int, int], None] | None = None,
) -> DatasetInspection:
    """Inspect a registered dataset by name, or any folder by path (which writes nothing)."""
    path = Path(target).expanduser()
    looks_like_path = os.sep in target or target in (".", "..") or path.is_dir()
    if looks_like_path:
        from kura.dataset.inspect import inspect_dataset

        folder = _existing_folder(path, "dataset")
        with _open_cache() as cache:
            inspection = inspect_dataset(
                folder, resolution=resolution or (1024, 1024), cache=cache, progress=progress
            )
        return DatasetInspection(inspection)
    workspace = workspace_finder()
    inspection = inspect_registered(workspace, target, resolution=resolution, progress=progress)
    spec = read_dataset(workspace, target)
    questions = open_questions(spec, inspection.to_dict())
    return DatasetInspection(inspection, target, spec.intent, tuple(questions))


def set_dataset_values(workspace: Workspace, name: str, assignments: list[str]) -> DatasetSet:
    """Apply ``key=value`` assignments to dataset.yaml (round-trip), validated before writing."""
    if not assignments:
        raise UsageError("nothing to set", hint="e.g. kura dataset set NAME intent.task=style")
    with workspace.lock():
        _, document = load_dataset(workspace, name)
        changed: dict[str, Any] = {}
        for assignment in assignments:
            key, sep, raw = assignment.partition("=")
            key = key.strip()
            if not sep or not key:
                raise UsageError(f"{assignment!r} is not key=value", hint="e.g. intent.task=style")
            if key.split(".")[0] not in SETTABLE_ROOTS:
                raise UsageError(
                    f"{key} cannot be set here",
                    hint=f"settable: {', '.join(SETTABLE_ROOTS)} (facts are written by inspect)",
                )
            _refuse_unencodable(assignment)
            value = parse_value(raw)  # an escaped lone surrogate ("\ud800") is refused here
            set_dotted(document, key, value)
            changed[key] = value
        spec = _validate_assignments(document, assignments, changed, spec_path(workspace, name))
        write_yaml(spec_path(workspace, name), document)
    return DatasetSet(name=name, changed=changed, intent=spec.intent)


def _validate_assignments(
    document: Any, assignments: list[str], changed: dict[str, Any], path: Path
) -> DatasetSpec:
    """dataset.yaml with the assignments applied, validated. When every error is about a
    key given on the command line, the error names those assignments (nothing was saved),
    not dataset.yaml, which holds no bad value; otherwise the file is at fault."""
    from pydantic import ValidationError

    from kura.errors import SpecError
    from kura.schema.base import describe_validation, plain

    try:
        return DatasetSpec.model_validate(plain(document))
    except ValidationError as exc:
        places = [".".join(str(part) for part in error["loc"]) for error in exc.errors()]
        if not places or not all(any(_concerns(p, k) for k in changed) for p in places):
            return validate_spec(DatasetSpec, document, source=path)
        keys = {a: a.partition("=")[0].strip() for a in assignments}
        bad = [a.strip() for a, k in keys.items() if any(_concerns(p, k) for p in places)]
        raise SpecError(
            f"`{' '.join(bad)}` (given on the command line) is not valid: "
            f"{describe_validation(exc)}",
            hint="nothing was saved; `kura schema dataset` lists the keys and the values "
            "each takes",
        ) from None


def _concerns(place: str, key: str) -> bool:
    """Whether a schema error at ``place`` (``intent.task``) is about the set ``key``."""
    return place == key or place.startswith(key + ".")


def _refuse_unencodable(assignment: str) -> None:
    """Refuse text that cannot be written as UTF-8 (bytes from a non-UTF-8 terminal arrive
    as lone surrogates) before anything is saved."""
    if undecodable(assignment):
        raise UsageError(
            f"{printable_name(assignment)!r} holds text that is not valid Unicode (non-UTF-8 "
            "bytes or a lone surrogate)",
            hint="give the value as plain UTF-8 text; nothing was saved",
        )


def validate_dataset(
    workspace: Workspace, name: str, *, progress: Callable[[int, int], None] | None = None
) -> DatasetChecked:
    """Re-inspect (cheap when unchanged) and sort problems into blocking and warnings."""
    checked, _ = validate_snapshot(
        workspace, read_dataset_snapshot(workspace, name), progress=progress
    )
    return checked


def validate_snapshot(
    workspace: Workspace,
    snapshot: DatasetSnapshot,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[DatasetChecked, DatasetSnapshot]:
    """:func:`validate_dataset` of a dataset already read, with the snapshot after it."""
    from kura.dataset.inspect import BLOCKING_CODES

    name = snapshot.name
    inspection, snapshot = inspect_snapshot(workspace, snapshot, progress=progress)
    report = inspection.to_dict()
    blocking = [p for p in report["problems"] if p["code"] in BLOCKING_CODES]
    warnings = [p for p in report["problems"] if p["code"] not in BLOCKING_CODES]
    return DatasetChecked(
        name=name,
        ok=not blocking,
        blocking=blocking,
        warnings=warnings,
        digest=report["digest"],
        counts=dict(report["counts"]),
        files=dict(inspection.files),
    ), snapshot


def list_datasets(workspace: Workspace) -> DatasetList:
    """Every registered dataset with its stored facts (no re-inspection)."""
    items = []
    for path in sorted(workspace.datasets_dir.glob(f"*/{SPEC_NAME}")):
        if path.parent.name.startswith("."):
            continue  # an older Kura's staging folder, left by a crash: never a dataset
        spec = read_dataset(workspace, path.parent.name)
        facts = spec.facts
        items.append(
            DatasetListEntry(
                name=spec.name,
                media=spec.media,
                linked=spec.linked,
                intent=spec.intent,
                counts=facts.counts if facts else None,
                digest=facts.digest if facts else None,
                blocking_problems=facts.blocking_problems if facts else None,
            )
        )
    return DatasetList(datasets=tuple(items))
