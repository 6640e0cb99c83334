"""A diffusers Wan header in the native names AI-Toolkit's Wan LoRAs use
(``toolkit/models/wan21/wan_lora_convert.py:38`` ``convert_to_original``)."""

from __future__ import annotations

from kura.export.wannames import native_wan_path, native_wan_shapes


def test_block_modules_take_their_native_names() -> None:
    assert native_wan_path("blocks.3.attn1.to_q.weight") == "blocks.3.self_attn.q.weight"
    assert native_wan_path("blocks.3.attn1.to_out.0.weight") == "blocks.3.self_attn.o.weight"
    assert native_wan_path("blocks.0.attn2.to_v.bias") == "blocks.0.cross_attn.v.bias"
    assert native_wan_path("blocks.0.attn2.add_k_proj.weight") == "blocks.0.cross_attn.k_img.weight"
    assert native_wan_path("blocks.9.ffn.net.0.proj.weight") == "blocks.9.ffn.0.weight"
    assert native_wan_path("blocks.9.ffn.net.2.weight") == "blocks.9.ffn.2.weight"


def test_keys_outside_the_blocks_keep_their_names() -> None:
    shapes = {
        "condition_embedder.text_embedder.linear_1.weight": (5120, 4096),
        "blocks.0.attn1.norm_q.weight": (5120,),
    }
    assert native_wan_shapes(shapes) == {
        "condition_embedder.text_embedder.linear_1.weight": (5120, 4096),
        "blocks.0.self_attn.norm_q.weight": (5120,),
    }
