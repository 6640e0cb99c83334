"""A built-in backend's knowledge as data: ``kura/data/knowledge/<backend>.yaml``.

Each file says what one trainer's own docs, examples and code give a run: ``defaults`` (every
recipe key, each with its source) and, per architecture, the card's upstream values per
section (``all`` or a task) and, for a video architecture, the values a video dataset's
entry is drafted with (``video``: frames, frame extraction). A backend's ``knowledge`` verb
reads its own file through :func:`trainer_knowledge`; the file is checked when read, so a
value without a source, a key the run schema does not have, or a value it refuses fails
loudly naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ValidationError

from kura.backends.base import TASKS, KnownValue, TrainerKnowledge
from kura.errors import Unsupported
from kura.schema.base import plain
from kura.schema.run import DatasetUse, TrainingSection
from kura.yamlio import parse_yaml

__all__ = ["SECTIONS", "recipe_keys", "trainer_knowledge"]

SECTIONS = ("all", *TASKS)
"""A card's sections: ``all`` applies to every task; a task's section outranks it."""


def recipe_keys(model: type[BaseModel] = TrainingSection, prefix: str = "training") -> list[str]:
    """Every recipe path (``training.network.rank`` …) of the run schema, in field order."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys += recipe_keys(annotation, f"{prefix}.{name}")
        else:
            keys.append(f"{prefix}.{name}")
    return keys


class _Table:
    """One backend's parsed file: its defaults and its architectures' sections."""

    def __init__(self, backend: str, raw: Mapping[str, Any], where: str) -> None:
        self.where = where
        self.backend = backend
        if raw.get("backend") != backend:
            raise ValueError(f"{where}: `backend` is {raw.get('backend')!r}, not {backend!r}")
        self.cite = str(raw.get("cite") or "").strip()
        if not self.cite:
            raise ValueError(f"{where}: `cite` (the trainer and release) is missing")
        self.defaults = self._defaults(raw.get("defaults") or {})
        architectures = raw.get("architectures") or {}
        self.architectures = {
            str(arch): self._architecture(str(arch), spec) for arch, spec in architectures.items()
        }
        self.video = {
            str(arch): self._video(str(arch), spec.get("video") or {}, spec.get("source"))
            for arch, spec in architectures.items()
        }

    def _known(self, key: str, raw: Any, source: str | None, what: str) -> KnownValue:
        if isinstance(raw, dict):
            if set(raw) != {"value", "source"}:
                raise ValueError(f"{self.where}: {what} {key}: a mapping is {{value, source}}")
            raw, source = raw["value"], str(raw["source"])
        if not source or not str(source).strip():
            raise ValueError(f"{self.where}: {what} {key} has no source")
        return KnownValue(raw, f"{self.cite} {' '.join(str(source).split())}")

    def _defaults(self, raw: Mapping[str, Any]) -> dict[str, KnownValue]:
        keys = recipe_keys()
        missing = [k for k in keys if k not in raw]
        extra = [k for k in raw if k not in keys]
        if missing or extra:
            raise ValueError(
                f"{self.where}: defaults must name every recipe key once "
                f"(missing: {missing or 'none'}; unknown: {extra or 'none'})"
            )
        defaults = {k: self._known(k, raw[k], None, "default") for k in keys}
        _validate(defaults, {}, f"{self.where}: defaults")
        return defaults

    def _architecture(self, arch: str, spec: Mapping[str, Any]) -> dict[str, dict[str, KnownValue]]:
        source = spec.get("source")
        sections: dict[str, dict[str, KnownValue]] = {}
        for section, values in spec.items():
            if section in ("source", "video"):
                continue
            if section not in SECTIONS:
                raise ValueError(f"{self.where}: {arch}: unknown section {section!r}")
            unknown = [k for k in values if k not in self.defaults]
            if unknown:
                raise ValueError(f"{self.where}: {arch}.{section}: unknown key(s) {unknown}")
            known = {k: self._known(k, v, source, f"{arch}.{section}") for k, v in values.items()}
            _validate(self.defaults, known, f"{self.where}: {arch}.{section}")
            sections[str(section)] = known
        return sections

    def _video(
        self, arch: str, raw: Mapping[str, Any], source: str | None
    ) -> dict[str, KnownValue]:
        allowed = ("frames", "frame_extraction", "frame_stride", "frame_sample", "max_frames")
        unknown = [k for k in raw if k not in allowed]
        if unknown:
            raise ValueError(f"{self.where}: {arch}.video: unknown key(s) {unknown}")
        video = {k: self._known(k, v, source, f"{arch}.video") for k, v in raw.items()}
        try:
            DatasetUse.model_validate({"name": "video", **{k: v.value for k, v in video.items()}})
        except ValidationError as error:
            raise ValueError(f"{self.where}: {arch}.video: {error}") from None
        return video


def _validate(
    defaults: Mapping[str, KnownValue], overlay: Mapping[str, KnownValue], where: str
) -> None:
    """The values, over the defaults, must make a valid run.yaml ``training`` section."""
    tree: dict[str, Any] = {}
    for key, known in {**defaults, **overlay}.items():
        node = tree
        parts = key.removeprefix("training.").split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = known.value
    try:
        TrainingSection.model_validate(tree)
    except ValidationError as error:
        raise ValueError(f"{where}: {error}") from None


@cache
def _table(backend: str) -> _Table:
    name = f"data/knowledge/{backend}.yaml"
    path = resources.files("kura").joinpath(name)
    text = path.read_text(encoding="utf-8")
    return _Table(backend, plain(parse_yaml(text, source=f"kura/{name}")), f"kura/{name}")


def trainer_knowledge(backend: str, architecture: str) -> TrainerKnowledge:
    """``backend``'s knowledge of ``architecture``: its defaults and that card's baselines
    (Unsupported when its file has no card for the architecture)."""
    table = _table(backend)
    sections = table.architectures.get(architecture)
    if sections is None:
        raise Unsupported(
            f"{backend} has no knowledge of {architecture}",
            hint=f"it knows {', '.join(table.architectures) or 'no architecture'} "
            f"(kura/data/knowledge/{backend}.yaml)",
        )
    return TrainerKnowledge(
        backend=backend,
        architecture=architecture,
        defaults=MappingProxyType(dict(table.defaults)),
        baselines=MappingProxyType({k: MappingProxyType(v) for k, v in sections.items()}),
        video=MappingProxyType(dict(table.video.get(architecture, {}))),
    )
