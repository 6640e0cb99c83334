"""A diffusers Wan transformer's module paths in the native Wan names LoRA files use.

AI-Toolkit trains Wan on the diffusers transformer but saves its LoRA keys in the native
(original Wan, ComfyUI) names: ``toolkit/models/wan21/wan21.py:726``
``convert_lora_weights_before_save`` calls ``toolkit/models/wan21/wan_lora_convert.py:38``
``convert_to_original`` (``attn1`` → ``self_attn``, ``attn2`` → ``cross_attn``, ``to_q/k/v``
→ ``q/k/v``, ``to_out.0`` → ``o``, ``add_k_proj/add_v_proj`` → ``k_img/v_img``,
``ffn.net.0.proj`` → ``ffn.0``, ``ffn.net.2`` → ``ffn.2``). Its LoRA adapts only layers
inside ``blocks`` (``transformer_only``, ``toolkit/lora_special.py:531``; block names
``['blocks']``, ``wan21.py:735``), so the base header is renamed the same way inside
``blocks.N.`` to check such a file against it; every other key keeps its name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["native_wan_path", "native_wan_shapes"]

_BLOCK = re.compile(r"^(?P<prefix>(?:.*\.)?blocks\.\d+\.)(?P<rest>.+)$")
_PARTS = (
    ("attn1.", "self_attn."),
    ("attn2.", "cross_attn."),
)
_LEAVES = (
    ("ffn.net.0.proj", "ffn.0"),
    ("ffn.net.2", "ffn.2"),
    ("to_out.0", "o"),
    ("to_q", "q"),
    ("to_k", "k"),
    ("to_v", "v"),
    ("add_k_proj", "k_img"),
    ("add_v_proj", "v_img"),
)


def native_wan_path(key: str) -> str:
    """``blocks.3.attn1.to_q.weight`` → ``blocks.3.self_attn.q.weight``; keys outside the
    blocks unchanged."""
    match = _BLOCK.match(key)
    if match is None:
        return key
    rest = match["rest"]
    for old, new in _PARTS:
        if rest.startswith(old):
            rest = new + rest[len(old) :]
            break
    for old, new in _LEAVES:
        rest = re.sub(rf"(^|\.){re.escape(old)}(?=\.|$)", rf"\g<1>{new}", rest)
    return match["prefix"] + rest


def native_wan_shapes(shapes: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """A diffusers Wan header's tensor shapes under the native names."""
    return {native_wan_path(key): shape for key, shape in shapes.items()}
