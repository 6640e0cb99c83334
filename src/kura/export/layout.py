"""The base model's adaptable modules, read from its safetensors header.

Every 2-D ``<path>.weight`` of the DiT file is a Linear layer LoRA can adapt: ``in`` is its
second dimension, ``out`` its first. Musubi's names for them follow
:data:`kura.export.formats.MUSUBI_NAMES` (a fused base weight becomes equal parts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kura.export.formats import BASE_PREFIXES, musubi_names

__all__ = ["BaseModule", "base_modules", "underscored"]


@dataclass(frozen=True)
class BaseModule:
    """One adaptable module as Musubi names it, and where it lives in the base file."""

    musubi: str
    base: str
    in_features: int
    out_features: int
    part: int = 0
    parts: int = 1


def underscored(path: str) -> str:
    """The sd-scripts/Musubi root form of a module path: ``.`` → ``_``."""
    return path.replace(".", "_")


def base_modules(shapes: Mapping[str, tuple[int, ...]], architecture: str) -> dict[str, BaseModule]:
    """Musubi module path → :class:`BaseModule`, from tensor name → shape of the DiT file."""
    names = musubi_names(architecture)
    modules: dict[str, BaseModule] = {}
    for key, shape in shapes.items():
        if not key.endswith(".weight") or len(shape) != 2:
            continue
        path = _strip_prefix(key[: -len(".weight")])
        out_features, in_features = int(shape[0]), int(shape[1])
        split = _match(path, [(s, parts) for s, parts in names.base_splits])
        if split is not None:
            stem, parts = split
            if out_features % len(parts):
                continue
            size = out_features // len(parts)
            for index, part in enumerate(parts):
                musubi = stem + part
                modules[musubi] = BaseModule(musubi, path, in_features, size, index, len(parts))
            continue
        renamed = _match(path, [(s, (target,)) for s, target in names.base_renames])
        musubi = renamed[0] + renamed[1][0] if renamed is not None else path
        modules[musubi] = BaseModule(musubi, path, in_features, out_features)
    return modules


def _strip_prefix(path: str) -> str:
    for prefix in BASE_PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _match(
    path: str, rules: list[tuple[str, tuple[str, ...]]]
) -> tuple[str, tuple[str, ...]] | None:
    """(stem, targets) when ``path`` ends with a rule's suffix at a name boundary."""
    for suffix, targets in rules:
        if path == suffix or path.endswith("." + suffix):
            return path[: len(path) - len(suffix)], targets
    return None
