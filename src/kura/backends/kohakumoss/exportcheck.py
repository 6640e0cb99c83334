"""Check KohakuMoss's exported LoRA files against the DiT they were trained on.

KohakuMoss writes ComfyUI and LyCORIS files with the same keys,
``lora_unet_layers_<i>_proj_<m>.{lora_down.weight,lora_up.weight,alpha}`` for the block
linears ``q, k, v, o, ffn_up_gate, ffn_down`` (or the fused ``proj_qkv`` when re-exported with
FUSED_QKV). Kura verifies every key and shape against the DiT's own header (read by Kura's
bounded header reader: no torch) and never converts the files: they already load in ComfyUI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kura.models.header import read_header

__all__ = ["ExportCheck", "check_export", "dit_linears"]

_LINEAR = re.compile(
    r"^(?:model\.diffusion_model\.|diffusion_model\.|transformer\.)?(layers\.\d+\.proj\.\w+)\.weight$"
)
_LORA = re.compile(r"^lora_unet_(layers_\d+_proj_\w+?)\.(lora_down\.weight|lora_up\.weight|alpha)$")


@dataclass(frozen=True)
class ExportCheck:
    """The verdict on one exported file."""

    path: Path
    modules: int
    rank: int | None
    fused_qkv: bool
    problems: tuple[str, ...]
    format: str | None

    @property
    def ok(self) -> bool:
        return not self.problems


def dit_linears(dit_files: tuple[Path, ...]) -> dict[str, tuple[int, int]]:
    """Block linear name (``layers_0_proj_q``) → (out, in) from the DiT's headers; a fused
    ``proj.qkv`` base adds its split q/k/v too, and an unfused one the fused name."""
    out: dict[str, tuple[int, int]] = {}
    for path in dit_files:
        for key, info in read_header(path).tensors.items():
            found = _LINEAR.match(key)
            if found and len(info.shape) == 2:
                out[found.group(1).replace(".", "_")] = (info.shape[0], info.shape[1])
    for name in list(out):
        stem = name.removesuffix("_q")
        if name.endswith("_q") and f"{stem}_k" in out and f"{stem}_v" in out:
            rows = out[name][0] + out[f"{stem}_k"][0] + out[f"{stem}_v"][0]
            out[f"{stem}_qkv"] = (rows, out[name][1])
        if name.endswith("_qkv"):
            stem = name.removesuffix("_qkv")
            third = (out[name][0] // 3, out[name][1])
            for part in ("q", "k", "v"):
                out.setdefault(f"{stem}_{part}", third)
    return out


def check_export(path: Path, linears: Mapping[str, tuple[int, int]]) -> ExportCheck:
    """Every key of ``path`` names a DiT linear with matching down/up shapes."""
    header = read_header(path)
    problems: list[str] = []
    modules: dict[str, dict[str, tuple[int, ...]]] = {}
    for key, info in header.tensors.items():
        found = _LORA.match(key)
        if not found:
            problems.append(f"{key}: not a KohakuMoss LoRA key (lora_unet_layers_N_proj_*)")
            continue
        modules.setdefault(found.group(1), {})[found.group(2)] = info.shape
    ranks = set()
    for name, parts in sorted(modules.items()):
        if name not in linears:
            problems.append(f"{name}: the DiT has no such linear")
            continue
        out_dim, in_dim = linears[name]
        down, up = parts.get("lora_down.weight"), parts.get("lora_up.weight")
        if down is None or up is None:
            problems.append(f"{name}: lacks lora_down or lora_up")
            continue
        rank = down[0]
        ranks.add(rank)
        if tuple(down) != (rank, in_dim) or tuple(up) != (out_dim, rank):
            problems.append(
                f"{name}: down {list(down)} / up {list(up)} do not fit the DiT's "
                f"[{out_dim}, {in_dim}]"
            )
    if len(ranks) > 1:
        problems.append(f"mixed ranks {sorted(ranks)}")
    fused = any(name.endswith("_qkv") for name in modules)
    if not modules:
        problems.append("no LoRA modules")
    return ExportCheck(
        path=path,
        modules=len(modules),
        rank=ranks.pop() if len(ranks) == 1 else None,
        fused_qkv=fused,
        problems=tuple(problems),
        format=header.metadata.get("kohakumoss_format"),
    )
