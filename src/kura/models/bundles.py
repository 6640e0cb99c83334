"""Bundles: the known sets of files one training run needs, looked up by id.

The data lives in :mod:`kura.models.bundle_table`; this module validates it into frozen
dataclasses, answers lookups, and renders ``docs/model-bundles.md``
(``python -m kura.models.bundles > docs/model-bundles.md``).
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kura.errors import NotFound
from kura.models.signatures import ARCHITECTURES, COMPONENTS, ROLES

__all__ = [
    "BACKEND",
    "Alternative",
    "Bundle",
    "FileSpec",
    "bundle_ids",
    "get_bundle",
    "list_bundles",
    "render_markdown",
]

BACKEND = "musubi-tuner"
FORMATS = ("safetensors", "pickle", "hf-repo", "folder")
CONFIDENCE = ("doc", "public-use")


@dataclass(frozen=True)
class Alternative:
    repo: str
    filename: str
    note: str = ""


@dataclass(frozen=True)
class FileSpec:
    """The recommended file for one role (slot) of a bundle."""

    slot: str
    role: str
    repo: str
    filename: str | None
    format: str = "safetensors"
    revision: str = "main"
    size: int | None = None
    sha256: str | None = None
    components: tuple[str, ...] = ()
    license: str | None = None
    gated: bool | None = None
    confidence: str = "doc"
    note: str = ""
    alternatives: tuple[Alternative, ...] = ()
    sources: tuple[str, ...] = ()
    dtype: str | None = None
    """The weight dtype the recommended file ships in (bf16/fp16/fp8), when recorded."""

    @property
    def basename(self) -> str | None:
        return self.filename.rsplit("/", 1)[-1] if self.filename else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "slot": self.slot,
            "role": self.role,
            "repo": self.repo,
            "filename": self.filename,
            "revision": self.revision,
            "format": self.format,
            "size": self.size,
            "sha256": self.sha256,
            "components": list(self.components),
            "license": self.license,
            "gated": self.gated,
            "confidence": self.confidence,
            "dtype": self.dtype,
            "note": self.note,
            "alternatives": [
                {"repo": a.repo, "filename": a.filename, "note": a.note} for a in self.alternatives
            ],
            "sources": list(self.sources),
        }


@dataclass(frozen=True)
class Bundle:
    id: str
    title: str
    architecture: str
    trainer: Mapping[str, str]
    files: tuple[FileSpec, ...]
    backend: str = BACKEND
    supported: bool = True
    note: str = ""
    estimator_model: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    native_resolutions: tuple[tuple[int, int], ...] = ()
    """The size(s) ``(width, height)`` the model was trained at; empty when not recorded."""
    native_resolution_source: str = ""

    def file(self, slot: str) -> FileSpec:
        for spec in self.files:
            if spec.slot == slot:
                return spec
        raise NotFound(
            f"bundle {self.id} has no role {slot!r}", hint=f"its roles: {', '.join(self.slots)}"
        )

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(spec.slot for spec in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "architecture": self.architecture,
            "backend": self.backend,
            "supported": self.supported,
            "trainer": dict(self.trainer),
            "estimator_model": self.estimator_model,
            "note": self.note,
            "native_resolutions": [list(size) for size in self.native_resolutions],
            "native_resolution_source": self.native_resolution_source,
            "roles": {spec.slot: spec.to_dict() for spec in self.files},
        }


def list_bundles() -> tuple[Bundle, ...]:
    """Every bundle in the table, in table order."""
    return _load()


def bundle_ids() -> tuple[str, ...]:
    return tuple(b.id for b in _load())


def get_bundle(bundle_id: str) -> Bundle:
    """The bundle named ``bundle_id``; :class:`NotFound` with the closest ids otherwise."""
    for bundle in _load():
        if bundle.id == bundle_id:
            return bundle
    close = difflib.get_close_matches(bundle_id, bundle_ids(), n=3)
    hint = f"did you mean {', '.join(close)}?" if close else "run `kura model bundles` to list them"
    raise NotFound(f"no model bundle named {bundle_id!r}", hint=hint)


@cache
def _load() -> tuple[Bundle, ...]:
    from kura.models.bundle_table import BUNDLES, ESTIMATOR_MODELS, NATIVE_RESOLUTIONS

    component_ids = {c.id for c in COMPONENTS}
    seen: set[str] = set()
    bundles = []
    for raw in BUNDLES:
        bundle_id = raw["id"]
        if bundle_id in seen:
            raise ValueError(f"bundle table: duplicate id {bundle_id}")
        seen.add(bundle_id)
        if raw["architecture"] not in ARCHITECTURES:
            raise ValueError(f"bundle {bundle_id}: unknown architecture {raw['architecture']}")
        files = tuple(
            _file_spec(bundle_id, slot, spec, component_ids) for slot, spec in raw["roles"].items()
        )
        bundles.append(
            Bundle(
                id=bundle_id,
                title=raw["title"],
                architecture=raw["architecture"],
                trainer=dict(raw.get("trainer", {})),
                files=files,
                backend=raw.get("backend", BACKEND),
                supported=raw.get("supported", True),
                note=raw.get("note", ""),
                estimator_model=ESTIMATOR_MODELS.get(bundle_id),
                **_native_resolution(bundle_id, NATIVE_RESOLUTIONS.get(bundle_id)),
            )
        )
    return tuple(bundles)


def _native_resolution(bundle_id: str, raw: Mapping[str, Any] | None) -> dict[str, Any]:
    if raw is None:
        return {}
    sizes = raw.get("sizes") or []
    if not raw.get("source"):
        raise ValueError(f"bundle {bundle_id}: native_resolution needs a source")
    if not sizes or any(
        len(size) != 2 or not all(isinstance(v, int) and v > 0 for v in size) for size in sizes
    ):
        raise ValueError(f"bundle {bundle_id}: native_resolution sizes are [width, height] pairs")
    return {
        "native_resolutions": tuple((int(w), int(h)) for w, h in sizes),
        "native_resolution_source": str(raw["source"]),
    }


def _file_spec(
    bundle_id: str, slot: str, raw: Mapping[str, Any], component_ids: set[str]
) -> FileSpec:
    where = f"bundle {bundle_id} role {slot}"
    if raw["role"] not in ROLES:
        raise ValueError(f"{where}: unknown role {raw['role']}")
    fmt = raw.get("format", "safetensors")
    if fmt not in FORMATS:
        raise ValueError(f"{where}: unknown format {fmt}")
    if raw.get("confidence", "doc") not in CONFIDENCE:
        raise ValueError(f"{where}: unknown confidence {raw.get('confidence')}")
    unknown = [c for c in raw.get("components", []) if c not in component_ids]
    if unknown:
        raise ValueError(f"{where}: unknown components {unknown}")
    sha = raw.get("sha256")
    if sha is not None and (len(sha) != 64 or any(ch not in "0123456789abcdef" for ch in sha)):
        raise ValueError(f"{where}: sha256 must be 64 lowercase hex digits")
    if not raw.get("sources"):
        raise ValueError(f"{where}: every file needs a source")
    if fmt != "hf-repo" and not raw.get("filename"):
        raise ValueError(f"{where}: a {fmt} file needs a filename")
    if raw.get("dtype") not in (None, "bf16", "fp16", "fp8"):
        raise ValueError(f"{where}: dtype must be bf16, fp16 or fp8, got {raw.get('dtype')}")
    return FileSpec(
        slot=slot,
        role=raw["role"],
        repo=raw["repo"],
        filename=raw.get("filename"),
        format=fmt,
        revision=raw.get("revision", "main"),
        size=raw.get("size"),
        sha256=sha,
        components=tuple(raw.get("components", ())),
        license=raw.get("license"),
        gated=raw.get("gated"),
        confidence=raw.get("confidence", "doc"),
        note=raw.get("note", ""),
        alternatives=tuple(
            Alternative(a["repo"], a["filename"], a.get("note", ""))
            for a in raw.get("alternatives", ())
        ),
        sources=tuple(raw["sources"]),
        dtype=raw.get("dtype"),
    )


def render_markdown() -> str:
    """The text of ``docs/model-bundles.md``, generated from the table."""
    lines = [
        "# Model bundles",
        "",
        "<!-- Generated by `python -m kura.models.bundles > docs/model-bundles.md`; do not edit "
        "by hand. -->",
        "",
        "Each bundle lists the files one training run takes, per role, for its backend (Musubi "
        "Tuner unless named). Kura checks every",
        "file by its safetensors header (never by its name) against the components named here.",
        "`size` and `sha256` are filled in only from a publisher's value; `—` means not recorded.",
        "Format `pickle` files (`.pt`/`.pth`) are verified by size and digest only; `hf-repo` "
        "entries",
        "are whole repositories the trainer loads by id; `folder` entries are subfolders of a "
        "pipeline",
        "root (`model.root` in run.yaml) whose safetensors shards are each checked by header.",
        "",
        "| bundle | architecture | backend | trainer setting | roles |",
        "|---|---|---|---|---|",
    ]
    for bundle in _load():
        setting = ", ".join(f"`{k}={v}`" for k, v in bundle.trainer.items()) or "—"
        status = "" if bundle.supported else " (not supported by the trainer)"
        lines.append(
            f"| `{bundle.id}`{status} | `{bundle.architecture}` | `{bundle.backend}` | {setting} | "
            f"{', '.join(bundle.slots)} |"
        )
    for bundle in _load():
        lines += ["", f"## `{bundle.id}` — {bundle.title}", ""]
        lines.append(
            f"Architecture `{bundle.architecture}` ({ARCHITECTURES[bundle.architecture]}), "
            f"backend `{bundle.backend}`."
        )
        if bundle.trainer and bundle.backend == BACKEND:
            dash, sep = "--", " "
            lines.append(
                "Trainer: "
                + ", ".join(f"`{dash}{k}{sep}{v}`" for k, v in bundle.trainer.items())
                + "."
            )
        elif bundle.trainer:
            lines.append(
                "Trainer: " + ", ".join(f"`{k}: {v}`" for k, v in bundle.trainer.items()) + "."
            )
        if not bundle.supported:
            lines.append("**Not supported by the trainer.**")
        if bundle.note:
            lines.append(f"Note: {bundle.note}.")
        if bundle.native_resolutions:
            sizes = ", ".join(f"{w}×{h}" for w, h in bundle.native_resolutions)
            lines.append(
                f"Native resolution: {sizes} ({bundle.native_resolution_source}); "
                "`kura run new` drafts datasets at it."
            )
        lines += [
            "",
            "| role | file | format | components | size | sha256 | licence / gated | source |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for spec in bundle.files:
            where = f"`{spec.repo}`" + (f" `{spec.filename}`" if spec.filename else "")
            comps = ", ".join(f"`{c}`" for c in spec.components) or "(not verified by header)"
            lic = (
                " / ".join(x for x in (spec.license or "", "gated" if spec.gated else "") if x)
                or "—"
            )
            sources = "; ".join(spec.sources) + (
                "" if spec.confidence == "doc" else f" [{spec.confidence}]"
            )
            lines.append(
                f"| {spec.slot} | {where} | {spec.format} | {comps} | {spec.size or '—'} | "
                f"{spec.sha256 or '—'} | {lic} | {sources} |"
            )
        notes = [(spec.slot, spec.note) for spec in bundle.files if spec.note]
        alts = [(spec.slot, alt) for spec in bundle.files for alt in spec.alternatives]
        if notes or alts:
            lines.append("")
        lines += [f"- {slot}: {note}" for slot, note in notes]
        lines += [
            f"- {slot} alternative: `{a.repo}` `{a.filename}`" + (f" — {a.note}" if a.note else "")
            for slot, a in alts
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
