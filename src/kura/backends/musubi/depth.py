"""Qwen-Image's DiT depth: the file's block count against what Musubi will build.

Musubi builds the Qwen-Image DiT with ``--num_layers`` blocks (60 when unset:
``qwen_image_model.create_model``) and loads the file into it strictly, so a file of
another depth dies at load with missing or unexpected keys, after both caching passes.
Kura reads the count from the DiT's header instead (``transformer_blocks.<i>.`` indices,
ComfyUI's ``model.diffusion_model.`` prefix allowed) and refuses a mismatch at compile.

The header is read by :func:`dit_depth`, the backend's ``prepare`` (compile itself does no
I/O), where Kura can read the file: on the host executor, whose paths are this machine's.
Inside an image the file is only there at run time; then a set ``num_layers`` is a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kura.backends.base import CompileInputs, TrainerFacts
from kura.backends.musubi.config import ExecConfig
from kura.errors import KuraError, SpecError

__all__ = ["QWEN_IMAGE_BLOCKS", "DitDepth", "check_depth", "count_blocks", "dit_depth"]

QWEN_IMAGE_BLOCKS = 60
"""The depth Musubi builds without ``--num_layers`` (qwen_image_model.create_model)."""
_BLOCK = re.compile(r"^(?:model\.diffusion_model\.)?transformer_blocks\.(\d+)\.")


@dataclass(frozen=True)
class DitDepth(TrainerFacts):
    """The run's DiT file and the blocks its header holds."""

    path: str
    blocks: int


def count_blocks(keys: list[str]) -> int:
    """Transformer blocks of a Qwen-Image DiT, by its tensor names."""
    return len({int(m.group(1)) for key in keys if (m := _BLOCK.match(key))})


def dit_depth(inputs: CompileInputs) -> DitDepth | None:
    """The DiT's block count where Kura can read the file (a Qwen-Image run on the host);
    None elsewhere, or while the file is not there yet (compile reports it as pending)."""
    from kura.models.header import read_header
    from kura.models.identify import shard_siblings

    path = inputs.model_paths.get("dit")
    if inputs.architecture != "qwen_image" or inputs.container_image is not None or not path:
        return None
    if not Path(path).is_file():
        return None
    try:
        files = shard_siblings(Path(path)) or [Path(path)]
        keys = [key for file in files for key in read_header(file).tensors]
    except KuraError:
        return None  # model resolution reports a damaged or incomplete file itself
    return DitDepth(path, count_blocks(keys))


def check_depth(cfg: ExecConfig, facts: TrainerFacts | None) -> list[str]:
    """SpecError when Musubi would build another depth than the DiT file has; a warning
    when ``num_layers`` is set and the file could not be read here."""
    wanted = next((int(v) for key, v in cfg.arch_keys if key.name == "num_layers"), None)
    if not isinstance(facts, DitDepth):
        if wanted is None:
            return []
        return [
            f"backend.config.num_layers {wanted}: Kura cannot read the DiT inside the image to "
            "count its blocks; Musubi refuses a file of another depth when it loads it"
        ]
    builds = wanted if wanted is not None else QWEN_IMAGE_BLOCKS
    if facts.blocks == builds:
        return []
    if wanted is None:
        raise SpecError(
            f"the DiT {facts.path} has {facts.blocks} transformer blocks, but Musubi builds "
            f"Qwen-Image's DiT with {QWEN_IMAGE_BLOCKS} (no --num_layers) and loads the file "
            "strictly",
            hint=f"set backend.config.num_layers: {facts.blocks} if this DiT is meant to have "
            f"{facts.blocks} blocks (a test or pruned model); otherwise use the released DiT",
        )
    raise SpecError(
        f"backend.config.num_layers is {wanted}, but the DiT {facts.path} has {facts.blocks} "
        "transformer blocks: Musubi would build the wrong depth and refuse the file at load",
        hint=f"set backend.config.num_layers: {facts.blocks}"
        + (" (or drop it)" if facts.blocks == QWEN_IMAGE_BLOCKS else ""),
    )
