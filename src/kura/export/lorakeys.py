"""Parse LoRA tensor names into module roots and factor roles, in either key style.

``musubi`` style: ``<root>.lora_down.weight`` ``[r, in]``, ``<root>.lora_up.weight``
``[out, r]``, ``<root>.alpha`` (scalar). ``diffusers`` style: ``diffusion_model.<path>``
(or ``transformer.<path>``) with ``.lora_A.weight`` ``[r, in]``, ``.lora_B.weight``
``[out, r]`` and optionally ``.alpha``. Anything else after the root (LoHa ``hada_*``, LoKr
``lokr_*``, DoRA ``dora_scale``) is kept as an ``extra`` factor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kura.export.formats import DIFFUSERS_PREFIX

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "KeyStyle",
    "LoraModule",
    "group_modules",
    "module_keys",
    "strip_diffusers_prefix",
]

KeyStyle = Literal["musubi", "diffusers"]

_SUFFIXES: Mapping[str, tuple[str, str]] = {
    "musubi": (".lora_down.weight", ".lora_up.weight"),
    "diffusers": (".lora_A.weight", ".lora_B.weight"),
}
_DIFFUSERS_PREFIXES = (DIFFUSERS_PREFIX, "transformer.")


@dataclass
class LoraModule:
    """The factors of one adapted module, under its root name as written in the file."""

    root: str
    down: np.ndarray | None = None
    up: np.ndarray | None = None
    alpha: np.ndarray | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def rank(self) -> int | None:
        return int(self.down.shape[0]) if self.down is not None else None


def group_modules(tensors: Mapping[str, np.ndarray], style: KeyStyle) -> dict[str, LoraModule]:
    """Root → :class:`LoraModule` for every tensor of a LoRA file in ``style``."""
    down_suffix, up_suffix = _SUFFIXES[style]
    modules: dict[str, LoraModule] = {}
    for key, value in tensors.items():
        for suffix, slot in ((down_suffix, "down"), (up_suffix, "up"), (".alpha", "alpha")):
            if key.endswith(suffix):
                root = key[: -len(suffix)]
                setattr(modules.setdefault(root, LoraModule(root)), slot, value)
                break
        else:
            root, _, rest = _split_extra(key, style)
            modules.setdefault(root, LoraModule(root)).extra[rest] = value
    return modules


def module_keys(
    module: LoraModule, style: KeyStyle, root: str | None = None
) -> dict[str, np.ndarray]:
    """Tensor name → array for ``module`` written in ``style`` under ``root``."""
    root = module.root if root is None else root
    down_suffix, up_suffix = _SUFFIXES[style]
    out: dict[str, np.ndarray] = {}
    if module.down is not None:
        out[root + down_suffix] = module.down
    if module.up is not None:
        out[root + up_suffix] = module.up
    if module.alpha is not None:
        out[root + ".alpha"] = module.alpha
    for rest, value in module.extra.items():
        out[f"{root}.{rest}"] = value
    return out


def strip_diffusers_prefix(root: str) -> str | None:
    """The module path of a diffusers-style root, or None without a known prefix."""
    for prefix in _DIFFUSERS_PREFIXES:
        if root.startswith(prefix):
            return root[len(prefix) :]
    return None


def _split_extra(key: str, style: KeyStyle) -> tuple[str, str, str]:
    if style == "musubi":
        root, _, rest = key.partition(".")
        return root, ".", rest
    # diffusers roots contain dots: the factor name is the last one or two parts
    parts = key.split(".")
    tail = 2 if parts[-1] == "weight" and len(parts) > 2 else 1
    return ".".join(parts[:-tail]), ".", ".".join(parts[-tail:])
