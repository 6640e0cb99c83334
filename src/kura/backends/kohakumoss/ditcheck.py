"""A MOSS DiT's structure from its header, read the way KohakuMoss reads it (pure).

KohakuMoss builds the DiT from its header alone (``model/io/load.py infer_config``): the
width from ``shared_block_modulation`` (6 × dim rows), the head size from
``layers.0.q_norm`` (heads = width ÷ head size, rounded down), the depth from the highest
``layers.N`` index, the text blocks from the ``text_embedder.blocks.N.qkv`` count. Then its
strict load wants every key of that shape (``load_state_into``). So a file missing one
block, or one tensor of a block, or whose head size does not divide its width, plans and
caches and only fails when training loads it; this check says so at ``kura model check``
and ``kura run plan`` (the backend's ``file_rules``), from the header only.

The key lists are KohakuMoss 0.1.0's ``base_keys`` of a ``MossBackbone`` (the real-run tests
compare them with the installed code); ``rope.bands`` is derived (``DERIVED``), never
required. Keys a file has beyond these (pre-quantised fp8 scales) are left to KohakuMoss's
own accounting at plan time (the helper's ``infer``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = [
    "LAYER_KEYS",
    "ROPE_AXES",
    "TEXT_BLOCK_KEYS",
    "TOP_KEYS",
    "dit_problems",
    "expected_keys",
]

TOP_KEYS = (
    "shared_block_modulation.weight",
    "shared_block_modulation.bias",
    "video_embedder.weight",
    "video_embedder.bias",
    "text_embedder.proj.weight",
    "text_embedder.proj.bias",
    "time_embedding.0.weight",
    "time_embedding.0.bias",
    "time_embedding.2.weight",
    "time_embedding.2.bias",
    "video_head_modulation.weight",
    "video_head_modulation.bias",
    "final_norm_video.weight",
    "final_linear_video.weight",
)
"""Keys outside the blocks."""

LAYER_KEYS = (
    "norm1.weight",
    "norm2.weight",
    "q_norm.weight",
    "k_norm.weight",
    "proj.q.weight",
    "proj.k.weight",
    "proj.v.weight",
    "proj.o.weight",
    "proj.ffn_up_gate.weight",
    "proj.ffn_down.weight",
)
"""Keys of every ``layers.N`` block (``proj.qkv.weight`` stands for q, k and v when fused)."""

TEXT_BLOCK_KEYS = (
    "norm1.weight",
    "norm2.weight",
    "q_norm.weight",
    "k_norm.weight",
    "qkv.weight",
    "qkv.bias",
    "proj.weight",
    "proj.bias",
    "ffn_gate.weight",
    "ffn_gate.bias",
    "ffn_up.weight",
    "ffn_up.bias",
    "ffn_down.weight",
    "ffn_down.bias",
)
"""Keys of every ``text_embedder.blocks.N`` block."""

ROPE_AXES = 4
"""``MossArchConfig.rope_axes``: a head size must divide by 2 × 4 (its ``validate``)."""

_FUSED = re.compile(r"^(layers\.\d+\.proj)\.qkv\.weight$")
_LAYER = re.compile(r"^layers\.(\d+)\.(.+)$")
_TEXT = re.compile(r"^text_embedder\.blocks\.(\d+)\.(.+)$")

Shape = tuple[int, ...]


def expected_keys(depth: int, text_blocks: int) -> frozenset[str]:
    """Every key KohakuMoss's strict load wants for that many blocks (bare names)."""
    return frozenset(
        (
            *TOP_KEYS,
            *(f"layers.{i}.{k}" for i in range(depth) for k in LAYER_KEYS),
            *(f"text_embedder.blocks.{i}.{k}" for i in range(text_blocks) for k in TEXT_BLOCK_KEYS),
        )
    )


def _model_keys(tensors: Mapping[str, Shape], prefix: str) -> dict[str, Shape]:
    """Bare model keys with their shapes: the format prefix stripped, a fused
    ``proj.qkv`` split into q, k and v (as KohakuMoss's ``ModelKeyView`` does)."""
    out: dict[str, Shape] = {}
    for key, shape in tensors.items():
        name = key[len(prefix) :] if prefix and key.startswith(prefix) else key
        fused = _FUSED.match(name)
        if fused is None:
            out[name] = tuple(shape)
            continue
        for part in "qkv":
            out[f"{fused.group(1)}.{part}.weight"] = (shape[0] // 3, *shape[1:])
    return out


def _indices(keys: Iterable[str], pattern: re.Pattern[str]) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for key in keys:
        match = pattern.match(key)
        if match:
            found.setdefault(int(match.group(1)), set()).add(match.group(2))
    return found


def _gaps(indices: Iterable[int]) -> list[int]:
    present = set(indices)
    return [i for i in range(max(present) + 1) if i not in present] if present else []


def _span(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers[:8]) + (" …" if len(numbers) > 8 else "")


def _block_problems(
    kind: str, blocks: dict[int, set[str]], wanted: tuple[str, ...], keys: Mapping[str, Shape]
) -> list[str]:
    """Gaps in the block indices, keys a block lacks, and shapes that differ from block 0."""
    problems = []
    gaps = _gaps(blocks)
    if gaps:
        problems.append(
            f"{kind} {_span(gaps)} missing (the file has {kind} up to {max(blocks)}): "
            "KohakuMoss builds the blocks from the header's indices and its strict load "
            "refuses the gap"
        )
    for index in sorted(blocks):
        lacking = [k for k in wanted if k not in blocks[index]]
        if lacking:
            problems.append(f"{kind}.{index} lacks {', '.join(lacking)}")
    first = min(blocks, default=None)
    if first is None:
        return problems
    for index in sorted(blocks):
        for name in wanted:
            this, ref = keys.get(f"{kind}.{index}.{name}"), keys.get(f"{kind}.{first}.{name}")
            if this is not None and ref is not None and this != ref:
                problems.append(
                    f"{kind}.{index}.{name} is {list(this)}, {kind}.{first}'s is {list(ref)}"
                )
    return problems


def _head_problems(keys: Mapping[str, Shape], *, packed: bool) -> list[str]:
    """The width, head size and the projections that must agree with them (not the
    projections of a packed file: their stored shapes are not their logical ones)."""
    modulation = keys.get("shared_block_modulation.weight")
    q_norm = keys.get("layers.0.q_norm.weight")
    if modulation is None or q_norm is None or not modulation or not q_norm:
        return []  # named as missing keys
    if modulation[0] % 6:
        return [f"shared_block_modulation.weight has {modulation[0]} rows, not 6 × a width"]
    dim, head = modulation[0] // 6, q_norm[0]
    problems = []
    if head <= 0 or dim % head:
        heads = dim // head if head > 0 else 0
        problems.append(
            f"the head size {head} (layers.0.q_norm.weight) does not divide the width {dim}: "
            f"no whole number of heads fits; KohakuMoss would build {heads} head(s) of "
            f"{dim // heads if heads else '—'} and load the {head}-wide norms into them"
        )
    elif head % (2 * ROPE_AXES):
        problems.append(
            f"the head size {head} (width {dim} ÷ {dim // head} heads) is not a multiple of "
            f"{2 * ROPE_AXES} (2 × rope_axes): KohakuMoss's MossArchConfig.validate refuses it"
        )
    k_norm = keys.get("layers.0.k_norm.weight")
    if k_norm is not None and k_norm != q_norm:
        problems.append(f"layers.0.k_norm.weight is {list(k_norm)}, q_norm's is {list(q_norm)}")
    for name in (
        () if packed else ("proj.q.weight", "proj.k.weight", "proj.v.weight", "proj.o.weight")
    ):
        shape = keys.get(f"layers.0.{name}")
        if shape is not None and shape != (dim, dim):
            problems.append(f"layers.0.{name} is {list(shape)}, not [{dim}, {dim}] (the width)")
    return problems


def dit_problems(
    tensors: Mapping[str, Shape], prefix: str = "", *, packed: bool = False
) -> tuple[str, ...]:
    """What keeps KohakuMoss from building and strictly loading this MOSS DiT (empty when
    nothing does), from its tensor names and shapes; ``prefix`` is the format prefix the
    keys carry (``model.diffusion_model.`` …); ``packed``: its weights are stored packed
    (NVFP4, bitsandbytes), so their shapes are not compared with the width."""
    keys = _model_keys(tensors, prefix)
    problems = [f"lacks {key}" for key in TOP_KEYS if key not in keys]
    layers = _indices(keys, _LAYER)
    if not layers:
        problems.append("has no layers.N blocks")
    problems += _block_problems("layers", layers, LAYER_KEYS, keys)
    text = _indices(keys, _TEXT)
    problems += _block_problems("text_embedder.blocks", text, TEXT_BLOCK_KEYS, keys)
    problems += _head_problems(keys, packed=packed)
    return tuple(problems)
