"""Find each role's file of a bundle and validate it by header.

Where a role's file is looked for, in order: a path the user gave (``--path role=FILE``),
the role's place under a pipeline root the user gave (``root / filename``: a local snapshot
of the bundle's repository, run.yaml's ``model.root``), the workspace ``models/`` folder (by
the recommended file's name, or its repo layout as ``kura model fetch --dest models`` writes
it), then the Hugging Face cache. A file found by
name is still accepted only if its header shows a component the bundle names for that role.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kura.errors import KuraError, Unsupported, UsageError
from kura.models.bundles import Bundle, FileSpec, get_bundle
from kura.models.checks import check_role, cross_check
from kura.models.hfcache import cached_file, hf_cache_dir
from kura.models.identify import ModelReport, identify, shard_siblings
from kura.models.signatures import component_by_id
from kura.nextsteps import NextStep, next_list

__all__ = ["Resolution", "RoleResolution", "judge_file", "parse_path_overrides", "resolve_bundle"]

_ACCEPTED = ("ok", "warning", "unverified")


@dataclass(frozen=True)
class RoleResolution:
    """One role of a bundle: where its file is (or that it is missing) and the verdict."""

    spec: FileSpec
    status: str
    path: Path | None = None
    source: str | None = None
    report: ModelReport | None = None
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    shards: tuple[Path, ...] = ()
    rejected: tuple[dict[str, Any], ...] = ()

    @property
    def accepted(self) -> bool:
        return self.status in _ACCEPTED

    def to_dict(self) -> dict[str, Any]:
        report = self.report
        return {
            "slot": self.spec.slot,
            "role": self.spec.role,
            "status": self.status,
            "path": str(self.path) if self.path else None,
            "source": self.source,
            "component": report.component if report else None,
            "size": report.size
            if report
            else (self.path.stat().st_size if self.path and self.path.is_file() else None),
            "header_digest": report.header_digest if report else None,
            "shards": [str(p) for p in self.shards],
            "problems": list(self.problems),
            "warnings": list(self.warnings),
            "rejected": list(self.rejected),
            "expected": {
                "repo": self.spec.repo,
                "filename": self.spec.filename,
                "revision": self.spec.revision,
                "format": self.spec.format,
                "components": list(self.spec.components),
                "size": self.spec.size,
                "sha256": self.spec.sha256,
            },
        }


@dataclass(frozen=True)
class Resolution:
    bundle: Bundle
    roles: tuple[RoleResolution, ...]
    cross_checks: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return all(r.accepted for r in self.roles) and not any(
            c["status"] == "mismatch" for c in self.cross_checks
        )

    def role(self, slot: str) -> RoleResolution:
        for entry in self.roles:
            if entry.spec.slot == slot:
                return entry
        raise KeyError(slot)

    def to_dict(self) -> dict[str, Any]:
        missing = [r for r in self.roles if r.status == "missing"]
        known = [r.spec.size for r in missing if r.spec.size is not None]
        return {
            "kind": "model-resolve",
            "bundle": self.bundle.id,
            "architecture": self.bundle.architecture,
            "backend": self.bundle.backend,
            "trainer": dict(self.bundle.trainer),
            "ok": self.ok,
            "roles": [r.to_dict() for r in self.roles],
            "missing": [r.spec.slot for r in missing],
            "next": next_list(
                NextStep(f"kura model fetch {self.bundle.id}", "download the missing roles")
                if missing
                else None
            ),
            "download": {
                "files": len(missing),
                "bytes_known": sum(known),
                "sizes_unknown": len(missing) - len(known),
            },
            "cross_checks": list(self.cross_checks),
        }


def parse_path_overrides(values: tuple[str, ...] | list[str], bundle: Bundle) -> dict[str, Path]:
    """``role=FILE`` pairs from the command line, checked against the bundle's roles."""
    overrides: dict[str, Path] = {}
    for value in values:
        slot, sep, file = value.partition("=")
        if not sep or not slot or not file:
            raise UsageError(
                f"--path {value!r} is not ROLE=FILE",
                hint=f"roles of {bundle.id}: {', '.join(bundle.slots)}",
            )
        if slot not in bundle.slots:
            raise UsageError(
                f"bundle {bundle.id} has no role {slot!r}",
                hint=f"its roles: {', '.join(bundle.slots)}",
            )
        overrides[slot] = Path(file).expanduser()
    return overrides


def resolve_bundle(
    bundle: Bundle | str,
    *,
    models_dir: Path | None = None,
    paths: Mapping[str, Path] | None = None,
    hf_cache: Path | None = None,
    root: Path | None = None,
) -> Resolution:
    """Locate and validate every role's file of ``bundle``. ``root`` is a local snapshot of
    the bundle's repository (a pipeline root): a role not in ``paths`` is ``root/filename``."""
    bundle = get_bundle(bundle) if isinstance(bundle, str) else bundle
    if not bundle.supported:
        raise Unsupported(
            f"bundle {bundle.id} is not supported by {bundle.backend}: {bundle.note}",
            hint="choose another bundle (`kura model bundles`)",
        )
    paths = dict(paths or {})
    if root is not None:
        for spec in bundle.files:
            if spec.slot not in paths and spec.filename:
                paths[spec.slot] = root / spec.filename
    cache = hf_cache or hf_cache_dir()
    roles = tuple(
        _resolve_role(bundle, spec, models_dir, paths.get(spec.slot), cache)
        for spec in bundle.files
    )
    reports = [r.report for r in roles if r.report is not None and r.accepted]
    crosses = tuple(c.to_dict() for c in cross_check(reports))
    return Resolution(bundle, roles, crosses)


def _resolve_role(
    bundle: Bundle, spec: FileSpec, models_dir: Path | None, given: Path | None, cache: Path
) -> RoleResolution:
    if given is not None:
        if not given.exists():
            return RoleResolution(
                spec, "missing", given, "given", problems=(f"{given} does not exist",)
            )
        return judge_file(given, spec, bundle, source="given")
    rejected: list[dict[str, Any]] = []
    first_refusal: RoleResolution | None = None
    for path, source in _candidates(spec, models_dir, cache):
        verdict = judge_file(path, spec, bundle, source=source)
        if verdict.accepted:
            return replace(verdict, rejected=tuple(rejected))
        rejected.append(
            {"path": str(path), "status": verdict.status, "problems": list(verdict.problems)}
        )
        first_refusal = first_refusal or verdict
    if first_refusal is not None:
        return replace(first_refusal, rejected=tuple(rejected))
    return RoleResolution(
        spec,
        "missing",
        problems=(
            f"not found in the workspace models/ folder or the Hugging Face cache ({cache})",
        ),
    )


def _candidates(spec: FileSpec, models_dir: Path | None, cache: Path) -> Iterator[tuple[Path, str]]:
    seen: set[Path] = set()
    if models_dir is not None and models_dir.is_dir() and spec.format != "hf-repo":
        layout = models_dir / spec.repo / spec.filename if spec.filename else None
        named = sorted(models_dir.rglob(spec.basename)) if spec.basename else []
        for path in ([layout] if layout is not None and layout.is_file() else []) + [
            p for p in named if p.is_file()
        ]:
            if path.resolve() not in seen:
                seen.add(path.resolve())
                yield path, "workspace"
    hit = cached_file(spec.repo, spec.filename or "", spec.revision, cache)
    if hit is not None:
        yield hit, "hf-cache"


def judge_file(
    path: Path, spec: FileSpec, bundle: Bundle, *, source: str | None = None
) -> RoleResolution:
    """Validate ``path`` for ``spec``'s role in ``bundle``: header identity, the file rules
    of the bundle's backend, and the published size where known."""
    if spec.format == "hf-repo":
        if not path.is_dir():
            return RoleResolution(
                spec,
                "refused",
                path,
                source,
                problems=(f"{path} is not a folder (a repository snapshot is expected)",),
            )
        return RoleResolution(
            spec,
            "unverified",
            path,
            source,
            warnings=("a repository snapshot: Kura does not check its files",),
        )
    if spec.format == "folder" and path.is_dir():
        files = sorted(path.glob("*.safetensors"))
        if not files:
            return RoleResolution(
                spec,
                "refused",
                path,
                source,
                problems=(f"{path} holds no .safetensors file for {spec.slot}",),
            )
        path = files[0]  # a shard set's first file, or the one file; siblings follow it
    if not path.is_file():
        return RoleResolution(spec, "refused", path, source, problems=(f"{path} is not a file",))
    if spec.format == "pickle":
        size_problems = _size_problems(path.stat().st_size, spec)
        return RoleResolution(
            spec,
            "refused" if size_problems else "unverified",
            path,
            source,
            problems=tuple(size_problems),
            warnings=(
                "a PyTorch pickle: Kura does not open pickles, it checks only size and digest",
            ),
        )
    try:
        report = identify(path)
        shards = tuple(shard_siblings(path))
    except KuraError as error:
        return RoleResolution(spec, "invalid", path, source, problems=(error.message,))
    from kura.backends.registry import get_backend

    verdict = check_role(
        report, bundle.architecture, spec.role, backend=get_backend(bundle.backend)
    )
    problems: list[str] = list(verdict.refusals)
    warnings: list[str] = list(verdict.warnings)
    status = verdict.status
    if spec.components:
        if report.component not in spec.components and not problems:
            titles = " or ".join(component_by_id(c).title for c in spec.components)
            problems.append(
                f"this is {report.title}; bundle {bundle.id} takes {titles} for {spec.slot}"
            )
    elif report.role == "unknown":
        problems = []
        status = "unverified"
        warnings = [
            f"Kura has no header signature for this {spec.role.replace('_', ' ')}: checked as "
            "well-formed safetensors only"
        ]
    if not shards:
        problems += _size_problems(report.size, spec)
    if problems:
        status = "refused"
    return RoleResolution(
        spec, status, path, source, report, tuple(problems), tuple(warnings), shards
    )


def _size_problems(size: int, spec: FileSpec) -> list[str]:
    if spec.size is not None and size != spec.size:
        return [f"the file has {size} bytes but {spec.repo}/{spec.filename} has {spec.size}"]
    return []
