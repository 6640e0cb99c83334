"""Convert Musubi LoRA tensors to the layout a target loads, and back.

Conversions follow Musubi's own scripts (v0.3.4):

- to ``diffusers`` (``convert_lora.py --target other``): ``diffusion_model.<path>.lora_A/
  lora_B.weight``, alpha dropped after multiplying each factor by ``sqrt(alpha / rank)``
  (computed in float32, written in the factor's own dtype);
- from ``diffusers`` (``--target default``): ``lora_unet_<path>`` with alpha = rank;
- ComfyUI ``fuse`` (``convert_*_lora_to_comfy.py``): suffix renames, and q/k/v parts fused
  into one module: downs stacked, ups placed block-diagonally, alpha × parts — the product
  ``up @ down × alpha / rank`` of every part is unchanged. Its reverse splits them again.

Source keys are resolved to Musubi module paths through the base model's real modules, so
underscored roots are never guessed; a root with no module is reported by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kura.errors import CheckFailed, Unsupported
from kura.export.formats import DIFFUSERS_PREFIX, MUSUBI_PREFIX, ComfyRule, comfy_rule
from kura.export.layout import BaseModule, underscored
from kura.export.lorakeys import LoraModule, group_modules, module_keys, strip_diffusers_prefix
from kura.export.verify import fused_groups, rename, target_style

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Conversion", "convert_lora", "resolve_musubi", "to_musubi"]


@dataclass
class Conversion:
    """Converted tensors, and whether they are the source tensors unchanged."""

    tensors: dict[str, np.ndarray]
    copied: bool
    mode: str
    source: str


def resolve_musubi(
    tensors: Mapping[str, np.ndarray], modules: Mapping[str, BaseModule]
) -> dict[str, LoraModule]:
    """Musubi module path → factors, for a file in Musubi's key style; raise
    :class:`CheckFailed` naming every root that is not a module of the base model."""
    by_root = {MUSUBI_PREFIX + underscored(path): path for path in modules}
    resolved: dict[str, LoraModule] = {}
    unmapped: list[str] = []
    for root, module in group_modules(tensors, "musubi").items():
        if root in by_root:
            resolved[by_root[root]] = module
        else:
            unmapped.append(root)
    if unmapped:
        raise _unmapped(unmapped)
    return resolved


def convert_lora(
    tensors: Mapping[str, np.ndarray],
    architecture: str,
    fmt: str,
    modules: Mapping[str, BaseModule],
) -> Conversion:
    """Musubi-style ``tensors`` in the layout ``fmt`` loads for ``architecture``."""
    resolved = resolve_musubi(tensors, modules)
    style = target_style(architecture, fmt)
    if fmt == "musubi":
        return Conversion(dict(tensors), True, "copy", "Musubi's own layout")
    if fmt == "diffusers":
        return Conversion(
            _to_diffusers(resolved), False, "diffusers", "musubi convert_lora.py --target other"
        )
    rule = comfy_rule(architecture)
    if rule.mode == "copy":
        return Conversion(dict(tensors), True, "copy", rule.source)
    if style == "diffusers":
        return Conversion(_to_diffusers(resolved), False, rule.mode, rule.source)
    return Conversion(
        _fuse(resolved, modules, rule.renames, rule.fusions), False, "fuse", rule.source
    )


def to_musubi(
    tensors: Mapping[str, np.ndarray],
    architecture: str,
    fmt: str,
    modules: Mapping[str, BaseModule],
) -> dict[str, np.ndarray]:
    """The reverse of :func:`convert_lora`: tensors written in ``fmt`` back in Musubi's
    layout (alpha = rank for ``diffusers`` input, as ``convert_lora.py --target default``)."""
    import numpy as np

    if fmt == "musubi" or (fmt == "comfyui" and comfy_rule(architecture).mode == "copy"):
        resolve_musubi(tensors, modules)
        return dict(tensors)
    out: dict[str, np.ndarray] = {}
    if target_style(architecture, fmt) == "diffusers":
        unmapped = []
        for root, module in group_modules(tensors, "diffusers").items():
            path = strip_diffusers_prefix(root)
            if path is None or path not in modules:
                unmapped.append(root)
                continue
            _require_plain(module)
            rank = module.rank or 0
            module.alpha = np.asarray(float(rank), dtype=np.float32)
            out.update(module_keys(module, "musubi", MUSUBI_PREFIX + underscored(path)))
        if unmapped:
            raise _unmapped(unmapped)
        return out
    return _split(tensors, modules, comfy_rule(architecture))


def _to_diffusers(resolved: Mapping[str, LoraModule]) -> dict[str, np.ndarray]:
    import numpy as np

    out: dict[str, np.ndarray] = {}
    for path, module in resolved.items():
        _require_plain(module)
        scale = 1.0
        if module.alpha is not None and module.rank:
            scale = float(np.sqrt(_scalar(module.alpha) / module.rank))
        root = DIFFUSERS_PREFIX + path
        for factor, suffix in ((module.down, ".lora_A.weight"), (module.up, ".lora_B.weight")):
            assert factor is not None
            out[root + suffix] = (factor.astype(np.float32) * scale).astype(factor.dtype)
    return out


def _fuse(
    resolved: Mapping[str, LoraModule],
    modules: Mapping[str, BaseModule],
    renames: tuple[tuple[str, str], ...],
    fusions: tuple[tuple[tuple[str, ...], str], ...],
) -> dict[str, np.ndarray]:
    import numpy as np

    out: dict[str, np.ndarray] = {}
    used: set[str] = set()
    for fused, (_, members) in fused_groups(modules, fusions).items():
        present = [m for m in members if m in resolved]
        if not present:
            continue
        if len(present) != len(members):
            missing = sorted(set(members) - set(present))
            raise CheckFailed(
                f"cannot fuse {fused} for ComfyUI: the LoRA adapts {', '.join(present)} "
                f"but not {', '.join(missing)}",
                hint="train with all of q, k and v adapted, or export with --format diffusers",
            )
        parts = [resolved[m] for m in members]
        for part in parts:
            _require_plain(part)
        ranks = {p.rank for p in parts}
        alphas = {_scalar(p.alpha) if p.alpha is not None else None for p in parts}
        if len(ranks) != 1 or len(alphas) != 1:
            raise CheckFailed(
                f"cannot fuse {fused}: its parts have different ranks or alphas",
                hint="export with --format diffusers, which keeps the parts separate",
            )
        downs = [p.down for p in parts if p.down is not None]
        ups = [p.up for p in parts if p.up is not None]
        rank = int(downs[0].shape[0])
        down = np.concatenate(downs, axis=0)
        total = sum(int(u.shape[0]) for u in ups)
        up = np.zeros((total, rank * len(parts)), dtype=ups[0].dtype)
        row = 0
        for index, piece in enumerate(ups):
            up[row : row + piece.shape[0], index * rank : (index + 1) * rank] = piece
            row += int(piece.shape[0])
        root = MUSUBI_PREFIX + underscored(fused)
        out[root + ".lora_down.weight"] = down
        out[root + ".lora_up.weight"] = up
        alpha = parts[0].alpha
        if alpha is not None:
            out[root + ".alpha"] = (alpha.astype(np.float32) * len(parts)).astype(alpha.dtype)
        used.update(members)
    for path, module in resolved.items():
        if path in used:
            continue
        root = MUSUBI_PREFIX + underscored(rename(path, renames))
        out.update(module_keys(module, "musubi", root))
    return out


def _split(
    tensors: Mapping[str, np.ndarray], modules: Mapping[str, BaseModule], rule: ComfyRule
) -> dict[str, np.ndarray]:
    import numpy as np

    renames, fusions = rule.renames, rule.fusions
    fused_roots = {
        MUSUBI_PREFIX + underscored(fused): members
        for fused, (_, members) in fused_groups(modules, fusions).items()
    }
    renamed_roots = {MUSUBI_PREFIX + underscored(rename(p, renames)): p for p in modules}
    out: dict[str, np.ndarray] = {}
    unmapped: list[str] = []
    for root, module in group_modules(tensors, "musubi").items():
        if root in fused_roots:
            _require_plain(module)
            members = fused_roots[root]
            assert module.down is not None and module.up is not None
            count = len(members)
            rank = module.down.shape[0] // count
            rows = module.up.shape[0] // count
            for index, member in enumerate(members):
                block = module.up[index * rows : (index + 1) * rows]
                own = block[:, index * rank : (index + 1) * rank]
                rest = np.delete(
                    block.astype(np.float32), np.s_[index * rank : (index + 1) * rank], 1
                )
                if np.any(rest != 0):
                    raise CheckFailed(
                        f"{root}: the fused up factor is not block-diagonal, so it cannot be "
                        "split back into q/k/v exactly"
                    )
                part = LoraModule(
                    root,
                    down=module.down[index * rank : (index + 1) * rank].copy(),
                    up=np.ascontiguousarray(own),
                )
                if module.alpha is not None:
                    part.alpha = (module.alpha.astype(np.float32) / count).astype(
                        module.alpha.dtype
                    )
                out.update(module_keys(part, "musubi", MUSUBI_PREFIX + underscored(member)))
        elif root in renamed_roots:
            out.update(
                module_keys(module, "musubi", MUSUBI_PREFIX + underscored(renamed_roots[root]))
            )
        else:
            unmapped.append(root)
    if unmapped:
        raise _unmapped(unmapped)
    return out


def _scalar(array: np.ndarray) -> float:
    """The value of a one-element tensor (alphas are 0-d, some writers use shape [1])."""
    import numpy as np

    return float(np.asarray(array, dtype=np.float32).reshape(-1)[0])


def _require_plain(module: LoraModule) -> None:
    if module.extra or module.down is None or module.up is None:
        kinds = ", ".join(sorted(module.extra)) or "a missing lora_down/lora_up factor"
        raise Unsupported(
            f"{module.root}: only plain LoRA (lora_down/lora_up/alpha) can be converted; "
            f"found {kinds}",
            hint="export LoHa/LoKr networks with --format musubi",
        )


def _unmapped(roots: list[str]) -> CheckFailed:
    shown = ", ".join(sorted(roots)[:8]) + (f" (+{len(roots) - 8} more)" if len(roots) > 8 else "")
    error = CheckFailed(
        f"{len(roots)} LoRA module(s) match no layer of the base model: {shown}",
        hint="is this LoRA for another architecture or model size? check the run's base bundle",
    )
    error.unmapped = sorted(roots)  # type: ignore[attr-defined]
    return error
