"""A sparse diffusers Wan 2.2 A14B transformer (real key names and 14B shapes), for the
tests of AI-Toolkit's two-expert LoRA files."""

from __future__ import annotations

from pathlib import Path

from kura.models.layouts import write_sparse_safetensors

DIM, FFN, RANK = 5120, 13824, 4
BASE = "aitk-wan2.2-t2v-a14b"
QKVO = [("q", "to_q"), ("k", "to_k"), ("v", "to_v"), ("o", "to_out.0")]
# (native module, diffusers module, out, in): the Linear layers of one Wan block
MODULES = [
    *[(f"self_attn.{n}", f"attn1.{d}", DIM, DIM) for n, d in QKVO],
    *[(f"cross_attn.{n}", f"attn2.{d}", DIM, DIM) for n, d in QKVO],
    ("ffn.0", "ffn.net.0.proj", FFN, DIM),
    ("ffn.2", "ffn.net.2", DIM, FFN),
]


def diffusers_transformer(folder: Path, blocks: int) -> None:
    """A sparse ``WanTransformer3DModel`` shard: real key names, real 14B shapes."""
    tensors: dict[str, tuple[str, list[int]]] = {
        "patch_embedding.weight": ("BF16", [DIM, 16, 1, 2, 2]),
        "condition_embedder.text_embedder.linear_1.weight": ("BF16", [DIM, 4096]),
        "proj_out.weight": ("BF16", [64, DIM]),
        "scale_shift_table": ("BF16", [1, 2, DIM]),
    }
    for i in range(blocks):
        for _, module, out_features, in_features in MODULES:
            tensors[f"blocks.{i}.{module}.weight"] = ("BF16", [out_features, in_features])
            tensors[f"blocks.{i}.{module}.bias"] = ("BF16", [out_features])
        tensors[f"blocks.{i}.attn1.norm_q.weight"] = ("BF16", [DIM])
        tensors[f"blocks.{i}.scale_shift_table"] = ("BF16", [1, 6, DIM])
    write_sparse_safetensors(folder / "diffusion_pytorch_model.safetensors", tensors)
