"""Check a LoRA against the key layout its target loads for one base model.

The target layout is derived from the base DiT's real module names (its safetensors
header, see :mod:`kura.export.layout`): root name → (in features, out features). A LoRA
passes when every root is in the layout (nothing unmapped), every ``down``/``A`` factor is
``[r, in]``, every ``up``/``B`` factor is ``[out, r]`` with the same ``r``, and every
alpha is a scalar.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kura.errors import Unsupported
from kura.export.formats import DIFFUSERS_PREFIX, MUSUBI_PREFIX, comfy_rule
from kura.export.layout import BaseModule, underscored
from kura.export.lorakeys import KeyStyle, group_modules

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Verification",
    "fused_groups",
    "rename",
    "target_layout",
    "target_style",
    "verify_lora",
]

Layout = dict[str, tuple[int, int]]


@dataclass
class Verification:
    """What checking a LoRA against its target layout found."""

    keys: int
    modules: int
    unmapped: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.unmapped and not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        return {
            "keys": self.keys,
            "modules": self.modules,
            "unmapped": list(self.unmapped),
            "mismatches": list(self.mismatches),
        }


def target_style(architecture: str, fmt: str) -> KeyStyle:
    """The key style ``fmt`` writes for ``architecture``."""
    if fmt == "musubi":
        return "musubi"
    if fmt == "diffusers":
        return "diffusers"
    rule = comfy_rule(architecture)
    if rule.mode == "unsupported":
        raise Unsupported(
            f"no verified ComfyUI LoRA layout for {architecture}: {rule.source}",
            hint=rule.hint,
        )
    return "diffusers" if rule.mode == "diffusers" else "musubi"


def fused_groups(
    modules: Mapping[str, BaseModule], fusions: tuple[tuple[tuple[str, ...], str], ...]
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Fused target path → (stem, Musubi part paths) for every stem holding all parts."""
    groups: dict[str, tuple[str, tuple[str, ...]]] = {}
    for parts, fused in fusions:
        first = parts[0]
        for path in modules:
            if path == first or path.endswith("." + first):
                stem = path[: len(path) - len(first)]
                members = tuple(stem + part for part in parts)
                if all(member in modules for member in members):
                    groups[stem + fused] = (stem, members)
    return groups


def target_layout(
    architecture: str, fmt: str, modules: Mapping[str, BaseModule]
) -> tuple[KeyStyle, Layout]:
    """The key style and root → (in, out) layout ``fmt`` loads for this base model."""
    style = target_style(architecture, fmt)
    if style == "diffusers":
        return style, {
            DIFFUSERS_PREFIX + p: (m.in_features, m.out_features) for p, m in modules.items()
        }
    rule = comfy_rule(architecture)
    if fmt != "comfyui" or rule.mode != "fuse":
        return style, {
            MUSUBI_PREFIX + underscored(p): (m.in_features, m.out_features)
            for p, m in modules.items()
        }
    layout: Layout = {}
    fused_members: set[str] = set()
    for fused, (_, members) in fused_groups(modules, rule.fusions).items():
        first = modules[members[0]]
        out = sum(modules[m].out_features for m in members)
        layout[MUSUBI_PREFIX + underscored(fused)] = (first.in_features, out)
        fused_members.update(members)
    for path, module in modules.items():
        if path in fused_members:
            continue
        layout[MUSUBI_PREFIX + underscored(rename(path, rule.renames))] = (
            module.in_features,
            module.out_features,
        )
    return style, layout


def rename(path: str, renames: tuple[tuple[str, str], ...]) -> str:
    """``path`` with the first matching suffix rename applied."""
    for old, new in renames:
        if path == old or path.endswith("." + old):
            return path[: len(path) - len(old)] + new
    return path


def verify_lora(
    tensors: Mapping[str, np.ndarray], style: KeyStyle, layout: Mapping[str, tuple[int, int]]
) -> Verification:
    """Check ``tensors`` (keys in ``style``) against ``layout``."""
    grouped = group_modules(tensors, style)
    report = Verification(keys=len(tensors), modules=len(grouped))
    for root in sorted(grouped):
        module = grouped[root]
        if root not in layout:
            report.unmapped.append(root)
            continue
        in_features, out_features = layout[root]
        down, up = module.down, module.up
        if down is None and up is None and not module.extra:
            report.mismatches.append(f"{root}: alpha without factors")
            continue
        if (down is None) != (up is None):
            report.mismatches.append(f"{root}: has only one of the two LoRA factors")
            continue
        if down is not None and up is not None:
            if down.ndim != 2 or down.shape[1] != in_features:
                report.mismatches.append(
                    f"{root}: down {list(down.shape)} but the base layer takes {in_features} inputs"
                )
            if up.ndim != 2 or up.shape[0] != out_features:
                report.mismatches.append(
                    f"{root}: up {list(up.shape)} but the base layer has {out_features} outputs"
                )
            if down.ndim == 2 and up.ndim == 2 and down.shape[0] != up.shape[1]:
                report.mismatches.append(
                    f"{root}: ranks differ (down {down.shape[0]}, up {up.shape[1]})"
                )
        if module.alpha is not None and module.alpha.size != 1:
            report.mismatches.append(f"{root}: alpha is not a scalar")
    return report
