"""`kura run compile`: run.yaml → ``runs/<id>/compiled/`` (dataset TOML, steps, container,
lock, checks).

The backend compiler is pure; this module gathers its inputs from the workspace (bundle,
model files by header, datasets and their facts), writes what it returns, and records the
lock: model files (``pending`` with the expected digest when not downloaded yet) and
dataset digests. Compiling twice gives byte-identical files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from kura.errors import InvalidInput
from kura.fsutil import write_text_if_changed
from kura.runs.layout import PathMap
from kura.runs.snapshot import RunSnapshot, take_snapshot
from kura.schema.run import RunSpec
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.backends.base import Backend
    from kura.dataset.registry import DatasetSnapshot
    from kura.schema.compiled import ContainerSpec

__all__ = [
    "COMPILED_DIR",
    "CompileReport",
    "compile_in_workspace",
    "file_sha256",
    "lock_path",
    "prepared_inputs",
]

COMPILED_DIR = "compiled"
LOCK_NAME = "run.lock"
STEPS_NAME = "steps.json"
CONTAINER_NAME = "container.json"


@dataclass(frozen=True)
class CompileReport:
    run_id: str
    files: list[str]
    steps: list[dict[str, Any]]
    container: dict[str, Any] | None
    lock: dict[str, Any]
    checks: list[dict[str, Any]]
    warnings: list[str]
    escape_hatch: bool
    changed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "run-compile",
            "run": self.run_id,
            "files": self.files,
            "steps": self.steps,
            "container": self.container,
            "lock": self.lock,
            "validate": self.checks,
            "warnings": self.warnings,
            "escape_hatch": self.escape_hatch,
            "changed": self.changed,
        }


def lock_path(workspace: Workspace, run_id: str) -> Path:
    return workspace.run_dir(run_id) / COMPILED_DIR / LOCK_NAME


def compile_in_workspace(
    workspace: Workspace, run_id: str, snapshot: RunSnapshot | None = None
) -> CompileReport:
    """Compile one run and write its ``compiled/`` folder (only files whose bytes change).

    ``snapshot`` is the run as the calling command read it (``run plan`` compiles exactly
    the run it sized and rendered); without one, compile takes its own, under the lock."""
    with workspace.lock():
        return _compile(workspace, snapshot or take_snapshot(workspace, run_id))


def _compile(workspace: Workspace, snapshot: RunSnapshot) -> CompileReport:
    from kura.backends.registry import get_backend, require_serves
    from kura.models.bundles import get_bundle
    from kura.runs.new import check_explicit_values
    from kura.schema.compiled import StepsFile
    from kura.schema.machine import machine_text

    spec, run_id, datasets = snapshot.spec, snapshot.run_id, snapshot.datasets
    backend = get_backend(spec.backend.name)
    require_serves(backend, get_bundle(spec.model.base).architecture)
    inputs, paths, resolution = _inputs(workspace, spec, datasets, backend)
    inputs = replace(inputs, trainer_facts=backend.prepare(spec, inputs))
    compiled = backend.compile(spec, inputs)
    check_explicit_values(
        workspace,
        snapshot.data(),
        source=snapshot.source,
        datasets={name: d.spec for name, d in datasets.items()},
    )
    lock = _lock(workspace, spec, resolution, compiled.release, datasets)
    lock["inputs"] = _input_files(compiled)
    container = (
        _container_with_hosts(compiled.container, paths)
        if paths.in_container and compiled.container is not None
        else None
    )
    steps = StepsFile(
        backend=compiled.backend, release=compiled.release, steps=list(compiled.steps)
    )
    outputs = dict(compiled.files.items())
    outputs[STEPS_NAME] = machine_text(steps)
    if container is not None:
        outputs[CONTAINER_NAME] = machine_text(container)
    outputs[LOCK_NAME] = _canonical(lock)
    folder = workspace.run_dir(run_id) / COMPILED_DIR
    changed = False
    with workspace.lock():
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(outputs.items()):
            changed |= write_text_if_changed(folder / name, text)
        for stale in sorted({p.name for p in folder.iterdir() if p.is_file()} - set(outputs)):
            (folder / stale).unlink()
            changed = True
    problems = backend.check_compiled(spec, folder)
    if problems:
        raise InvalidInput(
            f"{backend.title} refuses the compiled run {run_id}: " + "; ".join(problems),
            hint="fix the named value in run.yaml (backend.config or training), then compile "
            "or plan again",
            path=folder,
        )
    return CompileReport(
        run_id=run_id,
        files=[f"{COMPILED_DIR}/{name}" for name in sorted(outputs)],
        steps=[to_jsonable_python(step) for step in steps.steps],
        container=None if container is None else to_jsonable_python(container),
        lock=lock,
        checks=_checks(spec, resolution, datasets),
        warnings=list(compiled.warnings),
        escape_hatch=compiled.escape_hatch,
        changed=changed,
    )


def prepared_inputs(
    workspace: Workspace,
    spec: RunSpec,
    backend: Backend,
    datasets: Mapping[str, DatasetSnapshot] | None = None,
) -> Any:
    """The run's compile inputs with the backend's ``prepare`` facts (what plan hands on).
    ``datasets`` are the run's datasets as the command's snapshot read them; without them
    (a sweep's trial spec) they are read now."""
    from kura.dataset.registry import read_dataset_snapshot

    if datasets is None:
        names = dict.fromkeys(use.name for use in [*spec.datasets, *spec.validation])
        datasets = {name: read_dataset_snapshot(workspace, name) for name in names}
    inputs, _, _ = _inputs(workspace, spec, datasets, backend)
    return replace(inputs, trainer_facts=backend.prepare(spec, inputs))


def _inputs(
    workspace: Workspace,
    spec: RunSpec,
    datasets: Mapping[str, DatasetSnapshot],
    backend: Backend,
) -> tuple[Any, PathMap, Any]:
    from kura.backends.base import CompileInputs
    from kura.execution.executors import executor_class
    from kura.models.bundles import get_bundle
    from kura.models.resolve import resolve_bundle

    bundle = get_bundle(spec.model.base)
    paths = PathMap(in_container=executor_class(spec.execution.executor).in_container)
    root = Path(spec.model.root).expanduser() if spec.model.root else None
    resolution = resolve_bundle(
        bundle,
        models_dir=workspace.models_dir,
        paths={slot: Path(p).expanduser() for slot, p in spec.model.paths.items()},
        root=root,
    )
    model_paths: dict[str, str] = {}
    dtypes: dict[str, str] = {}
    for role in resolution.roles:
        host = role.path or workspace.models_dir / Path(role.spec.filename or role.spec.slot).name
        model_paths[role.spec.slot] = paths.model(role.spec.slot, host)
        for shard in role.shards[1:]:
            paths.model(role.spec.slot, shard)
        if role.report is not None:
            dtypes[role.spec.slot] = _weight_dtype(role.report.dtype, role.report.quantization)
    trainer_dir = backend.trainer_dir(workspace, in_container=paths.in_container)
    trainer_bin = backend.trainer_bin(workspace, in_container=paths.in_container)
    inputs = CompileInputs(
        architecture=bundle.architecture,
        model_version=_model_version(bundle.trainer),
        model_paths=model_paths,
        datasets=tuple(
            _dataset_input(workspace, datasets[use.name], paths) for use in spec.datasets
        ),
        run_dir=paths.run_dir(workspace.run_dir(spec.id)),
        trainer_dir=trainer_dir,
        weight_dtypes=dtypes,
        container_image=_image_tag(workspace, backend) if paths.in_container else None,
        validation=tuple(
            _dataset_input(workspace, datasets[use.name], paths) for use in spec.validation
        ),
        bundle=bundle.id,
        model_root=paths.model("root", root) if root is not None else None,
        trainer_bin=trainer_bin,
    )
    return inputs, paths, resolution


def _model_version(trainer: Any) -> str | None:
    for key in ("model_version", "task", "model_type"):
        if key in trainer:
            return str(trainer[key])
    return None


def _weight_dtype(dtype: str, quantization: str) -> str:
    if quantization.startswith("fp8"):
        return "fp8"
    return {"BF16": "bf16", "F16": "fp16", "F32": "fp32"}.get(dtype.upper(), dtype.lower())


def _dataset_input(workspace: Workspace, dataset: DatasetSnapshot, paths: PathMap) -> Any:
    from kura.backends.base import DatasetInput
    from kura.dataset.registry import control_dir, media_dir

    spec, name = dataset.spec, dataset.name
    if spec.facts is None:
        raise InvalidInput(
            f"dataset {name} has never been inspected",
            hint=f"run `kura dataset inspect {name}`",
        )
    from kura.runs.media import image_sizes, media_of

    control = control_dir(workspace, spec)
    counts = spec.facts.counts
    media = media_of(dataset.inspection())
    rates = {clip.fps for clip in media.clips}
    return DatasetInput(
        name=name,
        media_dir=paths.dataset(name, media_dir(workspace, spec)),
        caption_ext=spec.caption_ext,
        control_dir=paths.dataset(name, control, control=True) if control else None,
        kind="video" if counts.get("videos", 0) > 0 else "image",
        control_count=media.control_count if control else None,
        source_fps=next(iter(rates)) if len(rates) == 1 else None,
        clips=media.clips,
        images=counts.get("images", 0),
        items=(counts.get("images", 0) + counts.get("videos", 0)) or None,
        trigger=spec.intent.trigger,
        image_sizes=image_sizes(media_dir(workspace, spec), spec.caption_ext, control),
    )


def _lock(
    workspace: Workspace,
    spec: RunSpec,
    resolution: Any,
    release: str,
    datasets: Mapping[str, DatasetSnapshot],
) -> dict[str, Any]:
    """The run lock (schema :class:`kura.schema.lock.RunLock`, written only here). Each dataset
    names the folder the trainer reads, resolved, so a ``media:`` moved to a copy is seen."""
    from kura.dataset.registry import control_dir, media_dir
    from kura.models.lockdoc import build_lock
    from kura.schema.lock import RunLock

    entries = []
    for use in sorted([*spec.datasets, *spec.validation], key=lambda d: d.name):
        dataset = datasets[use.name].spec
        assert dataset.facts is not None
        control = control_dir(workspace, dataset)
        entries.append(
            {
                "name": use.name,
                "digest": dataset.facts.digest,
                "media": str(media_dir(workspace, dataset).resolve()),
                "control": None if control is None else str(control.resolve()),
            }
        )
    lock = RunLock.model_validate(
        {
            "run": spec.id,
            "trainer": {"name": spec.backend.name, "release": release},
            "models": build_lock(resolution),
            "datasets": entries,
        }
    )
    return lock.model_dump(mode="json")


def _input_files(compiled: Any) -> list[dict[str, Any]]:
    """The files the backend mounts with their host side already set (neither a model nor a
    dataset: a sample prompt's image), each with its size and digest for the launch gate;
    a missing one is refused here, at compile, naming it."""
    from kura.schema.lock import LockedInput

    if compiled.container is None:
        return []
    found: dict[str, dict[str, Any]] = {}
    for mount in compiled.container.mounts:
        if mount.source is None or mount.baked or mount.source in found:
            continue
        path = Path(mount.source)
        if not path.is_file():
            raise InvalidInput(
                f"{mount.purpose}: {path} is not a file on this machine",
                hint="fix the path in run.yaml (an absolute path to an existing file)",
                path=path,
            )
        found[mount.source] = LockedInput(
            path=mount.source,
            purpose=mount.purpose,
            size=path.stat().st_size,
            sha256=file_sha256(path),
        ).model_dump(mode="json")
    return [found[key] for key in sorted(found)]


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in chunks."""
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _checks(
    spec: RunSpec, resolution: Any, datasets: Mapping[str, DatasetSnapshot]
) -> list[dict[str, Any]]:
    """What must hold before launch, as far as compile can tell now."""
    checks = []
    for role in resolution.roles:
        status = {"missing": "pending"}.get(role.status, "ok" if role.accepted else "failed")
        detail = "; ".join(role.problems or role.warnings) or role.status
        checks.append({"check": f"model {role.spec.slot}", "status": status, "detail": detail})
    for use in spec.datasets:
        dataset = datasets[use.name].spec
        blocking = dataset.facts.blocking_problems if dataset.facts else 0
        checks.append(
            {
                "check": f"dataset {use.name}",
                "status": "ok" if blocking == 0 else "failed",
                "detail": f"{blocking} blocking problems (kura dataset validate {use.name})",
            }
        )
    checks.append(
        {
            "check": "trainer release in the image",
            "status": "pending",
            "detail": "checked at launch (`kura doctor`)",
        }
    )
    return checks


def _container_with_hosts(container: ContainerSpec, paths: PathMap) -> ContainerSpec:
    """The backend's mounts with their host sides, plus the sibling shards of a model."""
    from kura.schema.compiled import Mount

    mounts = []
    for mount in container.mounts:
        # A mount the backend gave its host side (a sample prompt's file) keeps it.
        source = mount.source or (None if mount.baked else paths.host_side(mount.target))
        if source is None and not mount.baked:
            source = _run_subfolder(mount.target, paths)
        mounts.append(replace(mount, source=source))
    known = {m.target for m in mounts}
    for host, target in sorted(paths.pairs.items()):
        if target not in known and "/models/" in target:
            mounts.append(Mount(target, True, "model shard", source=host))
    return replace(container, mounts=tuple(mounts))


def _run_subfolder(target: str, paths: PathMap) -> str | None:
    for host, mapped in paths.pairs.items():
        if target.startswith(mapped + "/"):
            return host + target[len(mapped) :]
    return None


def _canonical(document: Any) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _image_tag(workspace: Workspace, backend: Backend) -> str | None:
    """The image the backend's container executor runs (its ``image`` verb, which reads
    kura.toml where the backend lets the person name it); None for a backend without one."""
    from kura.errors import Unsupported

    try:
        return backend.image(workspace).tag
    except Unsupported:
        return None
