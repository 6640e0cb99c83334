"""``kura export RUN --format comfyui`` of an AI-Toolkit SDXL run: checked, not converted.

AI-Toolkit saves an SDXL LoRA (the legacy, non-PEFT path of ``toolkit/lora_special.py``) in
kohya names of the diffusers UNet: ``lora_unet_<module path, . → _>`` with
``.lora_down.weight``, ``.lora_up.weight`` and ``.alpha``, for the Linear and 1×1 Conv2d
layers inside each ``Transformer2DModel`` (``toolkit/kohya_lora.py``
``UNET_TARGET_REPLACE_MODULE``). ComfyUI maps exactly these names onto its SDXL UNet itself
(``comfy/lora.py`` ``model_lora_keys_unet``: ``lora_unet_`` + the diffusers key with dots
as underscores), so the tensors are written unchanged, with Kura's metadata added.

Before writing, every module is checked against the base UNet's own header: it must name a
Linear (``[out, in]``) or 1×1 convolution (``[out, in, 1, 1]``) of ``unet/`` in the run's
locked diffusers folder, with ``lora_down`` ``[rank, in(, 1, 1)]`` and ``lora_up``
``[out, rank(, 1, 1)]``. A single-file checkpoint names its UNet in the original (LDM)
layout, which Kura has no table for: that is refused, saying what to use instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import LoraExport
from kura.errors import CheckFailed, NotFound, Unsupported, UsageError

if TYPE_CHECKING:
    from kura.schema.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["UnetLinear", "check_sdxl_lora", "export_sdxl", "unet_linears"]

_KEY = re.compile(
    r"^lora_unet_(?P<module>\w+?)\.(?P<part>lora_down\.weight|lora_up\.weight|alpha)$"
)
_WHY = (
    "AI-Toolkit saves SDXL LoRAs in kohya names of the diffusers UNet (lora_unet_…), which "
    "ComfyUI maps onto its SDXL model itself (comfy/lora.py model_lora_keys_unet): tensors "
    "copied unchanged, Kura's metadata added"
)


@dataclass(frozen=True)
class UnetLinear:
    """A layer of the base UNet a LoRA can adapt: its sizes, and whether it is a 1×1 conv."""

    out_features: int
    in_features: int
    conv: bool


@dataclass(frozen=True)
class SdxlCheck:
    modules: int
    keys: int
    rank: int | None
    problems: tuple[str, ...]


def unet_linears(shapes: Mapping[str, tuple[int, ...]]) -> dict[str, UnetLinear]:
    """kohya module name (``down_blocks_1_attentions_0_proj_in``) → the layer, from the
    tensor shapes of a diffusers UNet."""
    found: dict[str, UnetLinear] = {}
    for key, shape in shapes.items():
        if not key.endswith(".weight"):
            continue
        name = key[: -len(".weight")].replace(".", "_")
        if len(shape) == 2:
            found[name] = UnetLinear(shape[0], shape[1], conv=False)
        elif len(shape) == 4 and tuple(shape[2:]) == (1, 1):
            found[name] = UnetLinear(shape[0], shape[1], conv=True)
    return found


def check_sdxl_lora(
    tensors: Mapping[str, tuple[int, ...]], linears: Mapping[str, UnetLinear]
) -> SdxlCheck:
    """Every key names a base layer with fitting down/up shapes and a scalar alpha."""
    problems: list[str] = []
    modules: dict[str, dict[str, tuple[int, ...]]] = {}
    for key, shape in sorted(tensors.items()):
        found = _KEY.match(key)
        if found is None:
            problems.append(f"{key}: not an SDXL UNet LoRA key (lora_unet_*)")
            continue
        modules.setdefault(found["module"], {})[found["part"]] = tuple(shape)
    ranks: set[int] = set()
    for name, parts in sorted(modules.items()):
        layer = linears.get(name)
        if layer is None:
            problems.append(f"{name}: the base UNet has no such Linear or 1x1 convolution")
            continue
        down, up = parts.get("lora_down.weight"), parts.get("lora_up.weight")
        if down is None or up is None:
            problems.append(f"{name}: lacks lora_down or lora_up")
            continue
        rank = down[0]
        tail = (1, 1) if layer.conv else ()
        if down != (rank, layer.in_features, *tail) or up != (layer.out_features, rank, *tail):
            problems.append(
                f"{name}: down {list(down)} / up {list(up)} do not fit the base layer "
                f"[{layer.out_features}, {layer.in_features}{', 1, 1' if layer.conv else ''}]"
            )
            continue
        if "alpha" in parts and parts["alpha"] not in ((), (1,)):
            problems.append(f"{name}: alpha has shape {list(parts['alpha'])}, not a scalar")
        ranks.add(rank)
    if len(ranks) > 1:
        problems.append(f"mixed ranks {sorted(ranks)}")
    if not modules:
        problems.append("no LoRA modules")
    return SdxlCheck(
        modules=len(modules),
        keys=len(tensors),
        rank=next(iter(ranks)) if len(ranks) == 1 else None,
        problems=tuple(problems),
    )


def _base_unet(workspace: Workspace, run_id: str) -> tuple[dict[str, tuple[int, ...]], str]:
    """The tensor shapes of ``unet/`` in the run's locked diffusers folder."""
    from kura.models.header import read_header
    from kura.schema.lock import RunLock
    from kura.schema.records import read_record

    lock = read_record(
        RunLock,
        workspace.run_dir(run_id) / "compiled" / "run.lock",
        fix=f"plan the run again (`kura run plan {run_id}`)",
    )
    entry = lock.models.roles.get("dit")
    if entry is None or entry.path is None:
        raise CheckFailed(
            f"run {run_id}'s lock names no SDXL model",
            hint=f"`kura run plan {run_id}` once the model is present",
        )
    folder = Path(entry.path)
    if folder.is_file():
        raise Unsupported(
            f"run {run_id} trained on the single-file checkpoint {folder}: Kura checks SDXL "
            "LoRA keys against a diffusers UNet and has no table of that file's original "
            "(LDM) names",
            hint="use the run's own file (ComfyUI loads AI-Toolkit's SDXL names as written), "
            "or train on aitk-sdxl-base-1.0 (a diffusers folder) to export a checked copy",
            path=folder,
        )
    shards = sorted((folder / "unet").glob("*.safetensors"))
    if not shards:
        raise NotFound(
            f"the locked SDXL folder {folder} has no unet/*.safetensors",
            hint="restore the model folder the run was planned with",
            path=folder,
        )
    shapes: dict[str, tuple[int, ...]] = {}
    for shard in shards:
        shapes.update({k: v.shape for k, v in read_header(shard).tensors.items()})
    return shapes, f"header of {folder}/unet ({len(shards)} file{'s' * (len(shards) > 1)})"


def _source(workspace: Workspace, run_id: str, epoch: int | None) -> tuple[Path, int | None]:
    """The final LoRA file, else the newest step file (and its step)."""
    from kura.backends.aitoolkit.follow import lora_checkpoints

    if epoch is not None:
        raise UsageError(
            "AI-Toolkit saves LoRA files by step, not by epoch",
            hint="drop --epoch: the run's final file is exported (or its newest step file)",
        )
    output = workspace.run_dir(run_id) / "output"
    files = lora_checkpoints(output, run_id)
    if not files:
        raise NotFound(
            f"run {run_id} has no LoRA files in {output}",
            hint="train first (`kura run launch`)",
            path=output,
        )
    step, path = files[-1]
    return path, step


def export_sdxl(
    workspace: Workspace, spec: RunSpec, *, epoch: int | None, out: Path | None
) -> LoraExport:
    from kura.export.exporting import export_metadata, export_recipe
    from kura.export.runfiles import trigger_words
    from kura.export.tensorio import read_tensors, serialize
    from kura.fsutil import atomic_write_bytes
    from kura.models.header import read_header

    source, step = _source(workspace, spec.id, epoch)
    shapes, where = _base_unet(workspace, spec.id)
    header = read_header(source)
    verdict = check_sdxl_lora({k: v.shape for k, v in header.tensors.items()}, unet_linears(shapes))
    if verdict.problems:
        raise CheckFailed(
            f"{source.name} does not fit the run's SDXL UNet ({where}): "
            + "; ".join(verdict.problems[:6])
            + (f" (+{len(verdict.problems) - 6} more)" if len(verdict.problems) > 6 else ""),
            hint="nothing was written; check that the run's model is the one trained",
            path=source,
        )
    tensors, metadata = read_tensors(source)
    datasets = [d.name for d in spec.datasets]
    new_metadata = export_metadata(
        metadata,
        run_id=spec.id,
        bundle_id=spec.model.base,
        architecture="sdxl",
        fmt="comfyui",
        source=source.name,
        epoch=None,
        triggers=trigger_words(workspace, datasets),
        recipe=export_recipe(spec, datasets),
        copied=True,
    )
    target = _target(workspace, spec.id, source.stem, out)
    if target.resolve() == source.resolve():
        raise UsageError(f"--out {target} is the source file itself", hint="name another file")
    atomic_write_bytes(target, serialize(tensors, new_metadata))
    return LoraExport(
        run=spec.id,
        epoch=None,
        step=step,
        format="comfyui",
        architecture="sdxl",
        source=str(source),
        out=str(target),
        copied=True,
        mode="copy",
        why=_WHY,
        verified_against=where,
        keys=verdict.keys,
        modules=verdict.modules,
        metadata=new_metadata,
        rank=verdict.rank,
    )


def _target(workspace: Workspace, run_id: str, stem: str, out: Path | None) -> Path:
    name = f"{stem}-comfyui.safetensors"
    if out is None:
        return workspace.run_dir(run_id) / "export" / name
    return out / name if out.is_dir() else out
