"""Per-component tensor layouts (real key names and shapes), and sparse files built from them.

Product code: export verification reads a base model's module names from these layouts when
the base file is absent (``kura.export.runfiles``), and ``kura demo`` and the hub-cache
stand-ins (:mod:`kura.models.standins`) write files from them. Tests use them too.

``write_sparse_safetensors`` writes a valid safetensors header and extends the file to its
declared size with ``truncate``, so a "24 GB" DiT costs a few kilobytes of disk. Tensor
data reads as zeros. ``component_layout`` gives, for every component in the signature table,
a representative set of real tensor names and shapes (enough to identify it, not every key),
optionally under a key prefix and in fp8, ComfyUI scaled-fp8 or NVFP4 form.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

from kura.errors import NotFound, UsageError
from kura.models.header import DTYPE_BITS

__all__ = [
    "LAYOUT_VARIANTS",
    "Layout",
    "component_fixture",
    "component_layout",
    "header_bytes",
    "known_layouts",
    "write_component",
    "write_sparse_safetensors",
]

Layout = dict[str, tuple[str, list[int]]]
LAYOUT_VARIANTS = ("bf16", "fp16", "fp8", "fp8-scaled-comfy", "nvfp4")


def header_bytes(
    tensors: Mapping[str, tuple[str, list[int]]], metadata: Mapping[str, str] | None = None
) -> tuple[bytes, int]:
    """The JSON header for ``tensors`` laid out back to back in name order (padded with
    spaces to a multiple of 8, as the reference writer does) and the data length."""
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name in sorted(tensors):
        dtype, shape = tensors[name]
        if dtype not in DTYPE_BITS:
            raise UsageError(f"unknown dtype {dtype!r} for tensor {name!r}")
        bits = math.prod(shape) * DTYPE_BITS[dtype]
        if bits % 8:
            raise UsageError(f"tensor {name!r}: {dtype} × {shape} does not fill whole bytes")
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + bits // 8],
        }
        offset += bits // 8
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return raw, offset


def write_sparse_safetensors(
    path: Path | str,
    tensors: Mapping[str, tuple[str, list[int]]],
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write a valid safetensors file whose data region is a hole (reads as zeros)."""
    path = Path(path)
    raw, data_length = header_bytes(tensors, metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(len(raw).to_bytes(8, "little"))
        handle.write(raw)
        handle.truncate(8 + len(raw) + data_length)
    return path


def write_component(
    path: Path | str,
    component_id: str,
    *,
    prefix: str = "",
    variant: str = "bf16",
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write the sparse fixture of ``component_id`` to ``path``."""
    tensors, meta = component_fixture(component_id, prefix=prefix, variant=variant)
    return write_sparse_safetensors(path, tensors, {**meta, **(metadata or {})} or None)


def component_layout(component_id: str, *, prefix: str = "", variant: str = "bf16") -> Layout:
    """Representative tensor names → (dtype, shape) of ``component_id``."""
    return component_fixture(component_id, prefix=prefix, variant=variant)[0]


def known_layouts() -> tuple[str, ...]:
    """Component ids that have a fixture layout."""
    return tuple(_LAYOUTS)


def component_fixture(
    component_id: str, *, prefix: str = "", variant: str = "bf16"
) -> tuple[Layout, dict[str, str]]:
    """Tensors and ``__metadata__`` for a fixture of ``component_id`` in ``variant``."""
    if component_id not in _LAYOUTS:
        raise NotFound(
            f"no fixture layout for component {component_id!r}",
            hint=f"known: {', '.join(_LAYOUTS)}",
        )
    if variant not in LAYOUT_VARIANTS:
        raise UsageError(
            f"unknown fixture variant {variant!r}",
            hint=f"choose one of {', '.join(LAYOUT_VARIANTS)}",
        )
    base = {name: ("BF16", list(shape)) for name, shape in _LAYOUTS[component_id]().items()}
    for name, spec in _EXACT_DTYPES.items():
        if name in base:
            base[name] = (spec, base[name][1])
    tensors, metadata = _apply_variant(base, variant)
    return {prefix + name: spec for name, spec in tensors.items()}, metadata


_EXACT_DTYPES = {"bn.num_batches_tracked": "I64"}


def _apply_variant(base: Layout, variant: str) -> tuple[Layout, dict[str, str]]:
    if variant == "bf16":
        return base, {}
    if variant == "fp16":
        return {n: ("F16" if d == "BF16" else d, s) for n, (d, s) in base.items()}, {}
    out: Layout = {}
    layers: dict[str, dict[str, str]] = {}
    for name, (dtype, shape) in base.items():
        is_weight = name.endswith(".weight") and len(shape) >= 2 and dtype == "BF16"
        if not is_weight or (variant == "nvfp4" and len(shape) != 2):
            out[name] = (dtype, shape)
            continue
        layer = name[: -len(".weight")]
        if variant == "fp8":
            out[name] = ("F8_E4M3", shape)
        elif variant == "fp8-scaled-comfy":
            out[name] = ("F8_E4M3", shape)
            out[f"{layer}.scale_weight"] = ("F32", [])
        elif variant == "nvfp4" and shape[-1] % 16 == 0:
            out[name] = ("U8", [*shape[:-1], shape[-1] // 2])
            out[f"{layer}.weight_scale"] = ("F8_E4M3", [*shape[:-1], shape[-1] // 16])
            out[f"{layer}.weight_scale_2"] = ("F32", [])
            layers[layer] = {"format": "nvfp4"}
        else:
            out[name] = (dtype, shape)
    metadata: dict[str, str] = {}
    if variant == "fp8-scaled-comfy":
        out["scaled_fp8"] = ("F8_E4M3", [0])
    if variant == "nvfp4" and layers:
        metadata["_quantization_metadata"] = json.dumps(
            {"format_version": "1.0", "layers": layers}, sort_keys=True
        )
    return out, metadata


def _blocks(template: Mapping[str, tuple[int, ...]], count: int) -> dict[str, tuple[int, ...]]:
    """Repeat ``template`` (names with ``{i}``) for blocks 0…count-1."""
    return {name.format(i=i): shape for i in range(count) for name, shape in template.items()}


def _moss(
    dim: int,
    depth: int,
    ffn: int,
    text_dim: int,
    *,
    head: int = 128,
    text_blocks: int = 2,
    freq_dim: int = 256,
    fused: bool = False,
) -> dict[str, tuple[int, ...]]:
    """A MOSS-Image DiT's full key layout, every key KohakuMoss's strict load wants
    (kohakumoss §6; the tiny model's keys, §5.1): a header Kura builds must pass the
    KohakuMoss backend's structure check (``kura.backends.kohakumoss.ditcheck``), so the
    blocks carry their norms and the text refiner blocks are there too."""
    proj: dict[str, tuple[int, ...]] = (
        {"layers.{i}.proj.qkv.weight": (3 * dim, dim)}
        if fused
        else {f"layers.{{i}}.proj.{m}.weight": (dim, dim) for m in ("q", "k", "v")}
    )
    return {
        "shared_block_modulation.weight": (6 * dim, dim),
        "shared_block_modulation.bias": (6 * dim,),
        "video_embedder.weight": (dim, 128),
        "video_embedder.bias": (dim,),
        "text_embedder.proj.weight": (dim, text_dim),
        "text_embedder.proj.bias": (dim,),
        "time_embedding.0.weight": (dim, freq_dim),
        "time_embedding.0.bias": (dim,),
        "time_embedding.2.weight": (dim, dim),
        "time_embedding.2.bias": (dim,),
        "video_head_modulation.weight": (2 * dim, dim),
        "video_head_modulation.bias": (2 * dim,),
        "final_norm_video.weight": (dim,),
        "final_linear_video.weight": (128, dim),
        **_blocks(
            {
                "layers.{i}.norm1.weight": (dim,),
                "layers.{i}.norm2.weight": (dim,),
                "layers.{i}.q_norm.weight": (head,),
                "layers.{i}.k_norm.weight": (head,),
                **proj,
                "layers.{i}.proj.o.weight": (dim, dim),
                "layers.{i}.proj.ffn_up_gate.weight": (2 * ffn, dim),
                "layers.{i}.proj.ffn_down.weight": (dim, ffn),
            },
            depth,
        ),
        **_blocks(
            {
                "text_embedder.blocks.{i}.norm1.weight": (dim,),
                "text_embedder.blocks.{i}.norm2.weight": (dim,),
                "text_embedder.blocks.{i}.q_norm.weight": (head,),
                "text_embedder.blocks.{i}.k_norm.weight": (head,),
                "text_embedder.blocks.{i}.qkv.weight": (3 * dim, dim),
                "text_embedder.blocks.{i}.qkv.bias": (3 * dim,),
                "text_embedder.blocks.{i}.proj.weight": (dim, dim),
                "text_embedder.blocks.{i}.proj.bias": (dim,),
                "text_embedder.blocks.{i}.ffn_gate.weight": (ffn, dim),
                "text_embedder.blocks.{i}.ffn_gate.bias": (ffn,),
                "text_embedder.blocks.{i}.ffn_up.weight": (ffn, dim),
                "text_embedder.blocks.{i}.ffn_up.bias": (ffn,),
                "text_embedder.blocks.{i}.ffn_down.weight": (dim, ffn),
                "text_embedder.blocks.{i}.ffn_down.bias": (dim,),
            },
            text_blocks,
        ),
    }


def _qwen35(width: int, layers: int, vocab: int) -> dict[str, tuple[int, ...]]:
    return {
        "embed_tokens.weight": (vocab, width),
        **_blocks(
            {
                "layers.{i}.linear_attn.A_log": (2,),
                "layers.{i}.linear_attn.in_proj_qkv.weight": (3 * width, width),
                "layers.{i}.post_attention_layernorm.weight": (width,),
            },
            layers,
        ),
    }


def _flux1(img_in: int, guidance: bool) -> dict[str, tuple[int, ...]]:
    keys = {
        "img_in.weight": (3072, img_in),
        "img_in.bias": (3072,),
        "txt_in.weight": (3072, 4096),
        "txt_in.bias": (3072,),
        "vector_in.in_layer.weight": (3072, 768),
        "time_in.in_layer.weight": (3072, 256),
        "final_layer.linear.weight": (64, 3072),
        **_blocks(
            {
                "double_blocks.{i}.img_attn.norm.key_norm.scale": (128,),
                "double_blocks.{i}.img_attn.qkv.weight": (9216, 3072),
                "double_blocks.{i}.img_mod.lin.weight": (18432, 3072),
                "double_blocks.{i}.img_mlp.0.weight": (12288, 3072),
            },
            19,
        ),
        **_blocks(
            {
                "single_blocks.{i}.linear1.weight": (21504, 3072),
                "single_blocks.{i}.modulation.lin.weight": (9216, 3072),
            },
            38,
        ),
    }
    if guidance:
        keys["guidance_in.in_layer.weight"] = (3072, 256)
    return keys


def _flux2(
    width: int, te: int, double: int, single: int, guidance: bool
) -> dict[str, tuple[int, ...]]:
    keys = {
        "img_in.weight": (width, 128),
        "txt_in.weight": (width, 3 * te),
        "time_in.in_layer.weight": (width, 256),
        "double_stream_modulation_img.lin.weight": (6 * width, width),
        "double_stream_modulation_txt.lin.weight": (6 * width, width),
        "single_stream_modulation.lin.weight": (3 * width, width),
        "final_layer.linear.weight": (128, width),
        "final_layer.adaLN_modulation.1.weight": (2 * width, width),
        **_blocks(
            {
                "double_blocks.{i}.img_attn.norm.key_norm.scale": (128,),
                "double_blocks.{i}.img_attn.qkv.weight": (3 * width, width),
                "double_blocks.{i}.img_mlp.0.weight": (6 * width, width),
                "double_blocks.{i}.img_mlp.2.weight": (width, 3 * width),
            },
            double,
        ),
        **_blocks(
            {
                "single_blocks.{i}.linear1.weight": (9 * width, width),
                "single_blocks.{i}.linear2.weight": (width, 4 * width),
            },
            single,
        ),
    }
    if guidance:
        keys["guidance_in.in_layer.weight"] = (width, 256)
    return keys


def _wan(
    dim: int, in_dim: int, layers: int, ffn: int, *, image: bool = False, emb_pos: bool = False
) -> dict[str, tuple[int, ...]]:
    keys = {
        "patch_embedding.weight": (dim, in_dim, 1, 2, 2),
        "patch_embedding.bias": (dim,),
        "text_embedding.0.weight": (dim, 4096),
        "text_embedding.2.weight": (dim, dim),
        "time_embedding.0.weight": (dim, 256),
        "head.modulation": (1, 2, dim),
        "head.head.weight": (4 * (48 if in_dim == 48 and dim == 3072 else 16), dim),
        **_blocks(
            {
                "blocks.{i}.self_attn.q.weight": (dim, dim),
                "blocks.{i}.self_attn.k.weight": (dim, dim),
                "blocks.{i}.cross_attn.q.weight": (dim, dim),
                "blocks.{i}.ffn.0.weight": (ffn, dim),
                "blocks.{i}.ffn.2.weight": (dim, ffn),
                "blocks.{i}.modulation": (1, 6, dim),
            },
            layers,
        ),
    }
    if image:
        keys.update(
            {
                "img_emb.proj.0.weight": (1280,),
                "img_emb.proj.1.weight": (1280, 1280),
                "img_emb.proj.3.weight": (dim, 1280),
            }
        )
        keys.update(
            _blocks(
                {
                    "blocks.{i}.cross_attn.k_img.weight": (dim, dim),
                    "blocks.{i}.cross_attn.v_img.weight": (dim, dim),
                },
                layers,
            )
        )
    if emb_pos:
        keys["img_emb.emb_pos"] = (1, 514, 1280)
    return keys


def _hunyuan(
    in_ch: int, patch: tuple[int, int, int], width: int, te: int, double: int, single: int
) -> dict[str, tuple[int, ...]]:
    keys = {
        "img_in.proj.weight": (width, in_ch, *patch),
        "txt_in.input_embedder.weight": (width, te),
        "txt_in.individual_token_refiner.blocks.0.norm1.weight": (width,),
        "txt_in.individual_token_refiner.blocks.1.norm1.weight": (width,),
        "time_in.mlp.0.weight": (width, 256),
        "final_layer.linear.weight": (64, width),
        **_blocks(
            {
                "double_blocks.{i}.img_attn.norm.key_norm.weight": (128,),
                "double_blocks.{i}.img_attn_qkv.weight": (3 * width, width),
                "double_blocks.{i}.img_mlp.fc1.weight": (4 * width, width),
                "double_blocks.{i}.img_mod.linear.weight": (6 * width, width),
            },
            double,
        ),
        **_blocks({"single_blocks.{i}.linear1.weight": (7 * width, width)}, single),
    }
    return keys


def _hv15() -> dict[str, tuple[int, ...]]:
    keys = _hunyuan(65, (1, 1, 1), 2048, 3584, 54, 0)
    keys.update(
        {
            "byt5_in.fc1.weight": (2048, 1472),
            "vision_in.proj.0.weight": (1152,),
            "cond_type_embedding.weight": (3, 2048),
        }
    )
    return keys


def _hv(in_ch: int) -> dict[str, tuple[int, ...]]:
    keys = _hunyuan(in_ch, (1, 2, 2), 3072, 4096, 20, 40)
    keys.update({"vector_in.in_layer.weight": (3072, 768), "guidance_in.mlp.0.weight": (3072, 256)})
    return keys


def _framepack() -> dict[str, tuple[int, ...]]:
    return {
        "x_embedder.proj.weight": (3072, 16, 1, 2, 2),
        "clean_x_embedder.proj.weight": (3072, 16, 1, 2, 2),
        "clean_x_embedder.proj_2x.weight": (3072, 16, 2, 4, 4),
        "clean_x_embedder.proj_4x.weight": (3072, 16, 4, 8, 8),
        "image_projection.up.weight": (9216, 1152),
        "image_projection.down.weight": (3072, 9216),
        "context_embedder.token_refiner.refiner_blocks.0.norm1.weight": (3072,),
        "context_embedder.proj_in.weight": (3072, 4096),
        "time_text_embed.guidance_embedder.linear_1.weight": (3072, 256),
        "time_text_embed.text_embedder.linear_1.weight": (3072, 768),
        "proj_out.weight": (64, 3072),
        **_blocks(
            {
                "transformer_blocks.{i}.attn.to_q.weight": (3072, 3072),
                "transformer_blocks.{i}.ff.net.0.proj.weight": (12288, 3072),
            },
            20,
        ),
        **_blocks(
            {
                "single_transformer_blocks.{i}.attn.to_q.weight": (3072, 3072),
                "single_transformer_blocks.{i}.proj_mlp.weight": (12288, 3072),
            },
            40,
        ),
    }


def _qwen_image(extra: Mapping[str, tuple[int, ...]] | None = None) -> dict[str, tuple[int, ...]]:
    keys = {
        "txt_norm.weight": (3584,),
        "img_in.weight": (3072, 64),
        "txt_in.weight": (3072, 3584),
        "proj_out.weight": (64, 3072),
        "time_text_embed.timestep_embedder.linear_1.weight": (3072, 256),
        **_blocks(
            {
                "transformer_blocks.{i}.attn.to_q.weight": (3072, 3072),
                "transformer_blocks.{i}.attn.add_q_proj.weight": (3072, 3072),
                "transformer_blocks.{i}.img_mlp.net.0.proj.weight": (12288, 3072),
                "transformer_blocks.{i}.img_mod.1.weight": (18432, 3072),
            },
            60,
        ),
    }
    keys.update(extra or {})
    return keys


def _zimage() -> dict[str, tuple[int, ...]]:
    return {
        "x_embedder.weight": (3840, 64),
        "final_layer.linear.weight": (64, 3840),
        "cap_embedder.0.weight": (2560,),
        "cap_embedder.1.weight": (3840, 2560),
        "x_pad_token": (1, 3840),
        "cap_pad_token": (1, 3840),
        "t_embedder.mlp.0.weight": (1024, 256),
        **_blocks(
            {
                "noise_refiner.{i}.attention.k_norm.weight": (128,),
                "noise_refiner.{i}.attention.qkv.weight": (11520, 3840),
            },
            2,
        ),
        **_blocks({"context_refiner.{i}.attention.qkv.weight": (11520, 3840)}, 2),
        **_blocks(
            {
                "layers.{i}.attention.qkv.weight": (11520, 3840),
                "layers.{i}.attention.out.weight": (3840, 3840),
                "layers.{i}.attention.k_norm.weight": (128,),
                "layers.{i}.feed_forward.w1.weight": (10240, 3840),
            },
            30,
        ),
    }


def _kandinsky(
    width: int, visual_in: int, text_blocks: int, visual_blocks: int
) -> dict[str, tuple[int, ...]]:
    return {
        "visual_embeddings.in_layer.weight": (width, visual_in),
        "visual_embeddings.in_layer.bias": (width,),
        "text_embeddings.in_layer.weight": (width, 3584),
        "pooled_text_embeddings.in_layer.weight": (512, 768),
        **_blocks(
            {"text_transformer_blocks.{i}.self_attention.to_query.weight": (width, width)},
            text_blocks,
        ),
        **_blocks(
            {
                "visual_transformer_blocks.{i}.cross_attention.key_norm.weight": (128,),
                "visual_transformer_blocks.{i}.self_attention.to_query.weight": (width, width),
                "visual_transformer_blocks.{i}.feed_forward.in_layer.weight": (4 * width, width),
            },
            visual_blocks,
        ),
    }


def _krea2() -> dict[str, tuple[int, ...]]:
    return {
        "first.weight": (6144, 64),
        "txtfusion.projector.weight": (1, 12),
        "txtfusion.layerwise_blocks.0.prenorm.scale": (2560,),
        **_blocks(
            {
                "blocks.{i}.attn.wq.weight": (6144, 6144),
                "blocks.{i}.attn.wk.weight": (1536, 6144),
                "blocks.{i}.attn.wv.weight": (1536, 6144),
                "blocks.{i}.mlp.w1.weight": (16384, 6144),
            },
            28,
        ),
    }


def _hidream_o1() -> dict[str, tuple[int, ...]]:
    # the official index names the pixel head under "model." beside the Qwen3-VL weights
    return {
        "model.t_embedder1.mlp.0.weight": (4096, 256),
        "model.x_embedder.proj1.weight": (4096, 3072),
        "model.visual.deepstack_merger_list.0.norm.weight": (4096,),
        "model.visual.merger.linear_fc2.weight": (4096, 4096),
        **_blocks(
            {
                "model.language_model.layers.{i}.self_attn.q_proj.weight": (4096, 4096),
                "model.language_model.layers.{i}.mlp.up_proj.weight": (12288, 4096),
            },
            36,
        ),
    }


def _sd_unet(label: bool) -> dict[str, tuple[int, ...]]:
    keys = {
        "input_blocks.0.0.weight": (320, 4, 3, 3),
        "input_blocks.1.0.in_layers.2.weight": (320, 320, 3, 3),
        "middle_block.0.in_layers.2.weight": (1280, 1280, 3, 3),
        "out.2.weight": (4, 320, 3, 3),
        "time_embed.0.weight": (1280, 320),
        "time_embed.2.weight": (1280, 1280),
    }
    if label:
        keys["label_emb.0.0.weight"] = (1280, 2816)
    return keys


def _ldm_vae(latent: int, *, flux2: bool = False) -> dict[str, tuple[int, ...]]:
    keys: dict[str, tuple[int, ...]] = {
        "encoder.conv_in.weight": (128, 3, 3, 3),
        "encoder.conv_out.weight": (2 * latent, 512, 3, 3),
        "encoder.down.0.block.0.conv1.weight": (128, 128, 3, 3),
        "encoder.mid.attn_1.q.weight": (512, 512, 1, 1),
        "decoder.conv_in.weight": (512, latent, 3, 3),
        "decoder.up.0.block.0.conv1.weight": (128, 256, 3, 3),
        "decoder.conv_out.weight": (3, 128, 3, 3),
    }
    if flux2:
        keys.update(
            {
                "bn.running_mean": (128,),
                "bn.running_var": (128,),
                "bn.num_batches_tracked": (),
                "encoder.quant_conv.weight": (2 * latent, 2 * latent, 1, 1),
                "decoder.post_quant_conv.weight": (latent, latent, 1, 1),
            }
        )
    if latent == 4:
        keys.update({"quant_conv.weight": (8, 8, 1, 1), "post_quant_conv.weight": (4, 4, 1, 1)})
    return keys


def _wan_vae(
    latent: int, rgb_in: int, base: int, *, upsample_residual: bool
) -> dict[str, tuple[int, ...]]:
    keys = {
        "encoder.conv1.weight": (base, rgb_in, 3, 3, 3),
        "encoder.head.2.weight": (2 * latent, 384, 3, 3, 3),
        "conv1.weight": (2 * latent, 2 * latent, 1, 1, 1),
        "conv2.weight": (latent, latent, 1, 1, 1),
        "decoder.conv1.weight": (384, latent, 3, 3, 3),
        "decoder.middle.0.residual.0.gamma": (384, 1, 1, 1),
        "decoder.middle.0.residual.2.weight": (384, 384, 3, 3, 3),
        "decoder.head.2.weight": (3, 96, 3, 3, 3),
    }
    if upsample_residual:
        keys["decoder.upsamples.0.upsamples.0.residual.2.weight"] = (1024, 1024, 3, 3, 3)
    return keys


def _hv_vae(latent: int, width: int) -> dict[str, tuple[int, ...]]:
    return {
        "encoder.conv_in.conv.weight": (128, 3, 3, 3, 3),
        "encoder.conv_out.conv.weight": (2 * latent, 512, 3, 3, 3),
        "encoder.mid_block.attentions.0.to_q.weight": (512, 512),
        "decoder.conv_in.conv.weight": (width, latent, 3, 3, 3),
        "decoder.mid_block.attentions.0.to_q.weight": (width, width),
        "decoder.conv_out.conv.weight": (3, 128, 3, 3, 3),
    }


def _t5(vocab: int, per_block_bias: bool) -> dict[str, tuple[int, ...]]:
    keys = {
        "shared.weight": (vocab, 4096),
        "encoder.final_layer_norm.weight": (4096,),
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight": (32, 64),
        **_blocks(
            {
                "encoder.block.{i}.layer.0.SelfAttention.q.weight": (4096, 4096),
                "encoder.block.{i}.layer.1.DenseReluDense.wi_0.weight": (10240, 4096),
                "encoder.block.{i}.layer.1.DenseReluDense.wi_1.weight": (10240, 4096),
                "encoder.block.{i}.layer.1.DenseReluDense.wo.weight": (4096, 10240),
            },
            24,
        ),
    }
    if per_block_bias:
        keys.update(
            _blocks(
                {
                    "encoder.block.{i}.layer.0.SelfAttention.relative_attention_bias.weight": (
                        32,
                        64,
                    )
                },
                24,
            )
        )
    return keys


def _byt5() -> dict[str, tuple[int, ...]]:
    return {
        "shared.weight": (384, 1472),
        "encoder.final_layer_norm.weight": (1472,),
        **_blocks(
            {
                "encoder.block.{i}.layer.0.SelfAttention.k.weight": (384, 1472),
                "encoder.block.{i}.layer.0.SelfAttention.q.weight": (384, 1472),
                "encoder.block.{i}.layer.1.DenseReluDense.wi_0.weight": (3584, 1472),
            },
            12,
        ),
    }


def _clip_text(width: int, layers: int) -> dict[str, tuple[int, ...]]:
    return {
        "text_model.embeddings.token_embedding.weight": (49408, width),
        "text_model.embeddings.position_embedding.weight": (77, width),
        "text_model.final_layer_norm.weight": (width,),
        **_blocks(
            {
                "text_model.encoder.layers.{i}.mlp.fc1.weight": (4 * width, width),
                "text_model.encoder.layers.{i}.self_attn.q_proj.weight": (width, width),
            },
            layers,
        ),
    }


def _llm(
    width: int,
    layers: int,
    vocab: int,
    *,
    kv: int,
    q_norm: bool = False,
    qkv_bias: bool = False,
    prefix: str = "model.",
) -> dict[str, tuple[int, ...]]:
    template: dict[str, tuple[int, ...]] = {
        prefix + "layers.{i}.self_attn.q_proj.weight": (width, width),
        prefix + "layers.{i}.self_attn.k_proj.weight": (kv, width),
        prefix + "layers.{i}.post_attention_layernorm.weight": (width,),
        prefix + "layers.{i}.mlp.up_proj.weight": (3 * width, width),
    }
    if q_norm:
        template[prefix + "layers.{i}.self_attn.q_norm.weight"] = (128,)
    if qkv_bias:
        template[prefix + "layers.{i}.self_attn.k_proj.bias"] = (kv,)
    return {
        prefix + "embed_tokens.weight": (vocab, width),
        prefix + "norm.weight": (width,),
        **_blocks(template, layers),
    }


def _qwen3_vl(width: int) -> dict[str, tuple[int, ...]]:
    keys = _llm(width, 36, 151936, kv=1024, q_norm=True, prefix="model.language_model.")
    keys.update(
        {
            "model.visual.patch_embed.proj.weight": (1024, 3, 2, 16, 16),
            "model.visual.deepstack_merger_list.0.norm.weight": (4096,),
            "model.visual.merger.linear_fc2.weight": (width, 4096),
        }
    )
    return keys


def _vision(width: int, layers: int, positions: int, norm: str) -> dict[str, tuple[int, ...]]:
    return {
        "vision_model.embeddings.patch_embedding.weight": (width, 3, 14, 14),
        "vision_model.embeddings.position_embedding.weight": (positions, width),
        "vision_model.post_layernorm.weight": (width,),
        **_blocks(
            {
                f"vision_model.encoder.layers.{{i}}.{norm}.weight": (width,),
                "vision_model.encoder.layers.{i}.mlp.fc1.weight": (4 * width, width),
            },
            layers,
        ),
    }


_LAYOUTS: dict[str, Callable[[], dict[str, tuple[int, ...]]]] = {
    "hunyuan-video-1.5-dit": _hv15,
    "hunyuan-video-dit": lambda: _hv(16),
    "skyreels-i2v-dit": lambda: _hv(32),
    "hunyuan-video-i2v-dit": lambda: _hv(33),
    "framepack-dit": _framepack,
    "flux2-dev-dit": lambda: _flux2(6144, 5120, 8, 48, guidance=True),
    "flux2-klein-9b-dit": lambda: _flux2(4096, 4096, 8, 24, guidance=False),
    "flux2-klein-4b-dit": lambda: _flux2(3072, 2560, 5, 20, guidance=False),
    "flux2-diffusers-dit": lambda: {
        "x_embedder.weight": (4096, 128),
        "double_stream_modulation_img.linear.weight": (24576, 4096),
        "single_stream_modulation.linear.weight": (12288, 4096),
        **_blocks({"single_transformer_blocks.{i}.attn.to_qkv_mlp_proj.weight": (36864, 4096)}, 24),
    },
    "flux1-dit": lambda: _flux1(64, guidance=True),
    "flux1-schnell-dit": lambda: _flux1(64, guidance=False),
    "flux1-fill-dit": lambda: _flux1(384, guidance=True),
    "flux1-control-dit": lambda: _flux1(128, guidance=True),
    "flux1-diffusers-dit": lambda: {
        "x_embedder.weight": (3072, 64),
        "context_embedder.weight": (3072, 4096),
        **_blocks({"transformer_blocks.{i}.attn.to_q.weight": (3072, 3072)}, 19),
        **_blocks({"single_transformer_blocks.{i}.proj_mlp.weight": (12288, 3072)}, 38),
    },
    "wan-vace-dit": lambda: {
        **_wan(5120, 16, 40, 13824),
        "vace_patch_embedding.weight": (5120, 96, 1, 2, 2),
    },
    "wan21-flf2v-14b-dit": lambda: _wan(5120, 36, 40, 13824, image=True, emb_pos=True),
    "wan21-i2v-14b-dit": lambda: _wan(5120, 36, 40, 13824, image=True),
    "wan21-fun-control-dit": lambda: _wan(5120, 48, 40, 13824, image=True),
    "wan22-i2v-a14b-dit": lambda: _wan(5120, 36, 40, 13824),
    "wan-t2v-14b-dit": lambda: _wan(5120, 16, 40, 13824),
    "wan21-t2v-1.3b-dit": lambda: _wan(1536, 16, 30, 8960),
    "wan22-ti2v-5b-dit": lambda: _wan(3072, 48, 30, 14336),
    "wan-diffusers-dit": lambda: {
        "scale_shift_table": (1, 2, 5120),
        "condition_embedder.text_embedder.linear_1.weight": (5120, 4096),
        "patch_embedding.weight": (5120, 16, 1, 2, 2),
        **_blocks({"blocks.{i}.attn1.to_q.weight": (5120, 5120)}, 40),
    },
    "zimage-dit": _zimage,
    "qwen-image-layered-dit": lambda: _qwen_image(
        {"time_text_embed.addition_t_embedding.weight": (2, 3072)}
    ),
    "qwen-image-edit-2511-dit": lambda: _qwen_image({"__index_timestep_zero__": ()}),
    "qwen-image-dit": _qwen_image,
    "kandinsky5-video-pro-dit": lambda: _kandinsky(4096, 132, 4, 60),
    "kandinsky5-video-lite-dit": lambda: _kandinsky(1792, 132, 2, 32),
    "kandinsky5-image-lite-dit": lambda: _kandinsky(2560, 64, 2, 50),
    "krea2-dit": _krea2,
    "hidream-o1-dit": _hidream_o1,
    "hidream-i1-dit": lambda: {
        "caption_projection.0.linear.weight": (2560, 4096),
        "x_embedder.proj.weight": (2560, 64),
        **_blocks({"double_stream_blocks.{i}.block.attn1.to_q.weight": (2560, 2560)}, 16),
    },
    "sd3-dit": lambda: {
        "x_embedder.proj.weight": (1536, 16, 2, 2),
        "context_embedder.weight": (1536, 4096),
        **_blocks({"joint_blocks.{i}.context_block.attn.qkv.weight": (4608, 1536)}, 24),
    },
    "sdxl-unet": lambda: _sd_unet(True),
    "chroma-dit": lambda: {
        **{k: v for k, v in _flux1(64, False).items() if not k.startswith("vector_in")},
        "distilled_guidance_layer.in_proj.weight": (5120, 64),
        "distilled_guidance_layer.out_proj.weight": (3072, 5120),
    },
    "sd1-unet": lambda: _sd_unet(False),
    "moss-image-dit": lambda: _moss(3072, 42, 8192, 4096),
    "moss-image-dit-custom": lambda: _moss(64, 2, 128, 32, head=32, text_blocks=1, freq_dim=32),
    "flux2-vae": lambda: _ldm_vae(32, flux2=True),
    "flux2-vae-custom": lambda: {
        "decoder.conv_in.weight": (16, 32, 3, 3),
        "encoder.conv_out.weight": (64, 16, 3, 3),
        "bn.running_mean": (128,),
        "bn.running_var": (128,),
        "bn.num_batches_tracked": (),
    },
    "flux1-ae": lambda: _ldm_vae(16),
    "sd-vae": lambda: _ldm_vae(4),
    "wan22-vae": lambda: {**_wan_vae(48, 12, 160, upsample_residual=True)},
    "qwen-image-layered-vae": lambda: _wan_vae(16, 4, 96, upsample_residual=False),
    "wan21-vae": lambda: _wan_vae(16, 3, 96, upsample_residual=False),
    "wan21-vae-diffusers": lambda: {
        "encoder.conv_in.weight": (96, 3, 3, 3, 3),
        "quant_conv.weight": (32, 32, 1, 1, 1),
        "post_quant_conv.weight": (16, 16, 1, 1, 1),
        "decoder.conv_in.weight": (384, 16, 3, 3, 3),
        "decoder.mid_block.resnets.0.conv1.weight": (384, 384, 3, 3, 3),
        "decoder.conv_out.weight": (3, 96, 3, 3, 3),
    },
    "hunyuan-video-1.5-vae": lambda: _hv_vae(32, 1024),
    "hunyuan-video-vae": lambda: _hv_vae(16, 512),
    "umt5-xxl": lambda: _t5(256384, per_block_bias=True),
    "wan-umt5-xxl": lambda: {
        "token_embedding.weight": (256384, 4096),
        "norm.weight": (4096,),
        **_blocks(
            {
                "blocks.{i}.norm1.weight": (4096,),
                "blocks.{i}.attn.q.weight": (4096, 4096),
                "blocks.{i}.attn.o.weight": (4096, 4096),
                "blocks.{i}.norm2.weight": (4096,),
                "blocks.{i}.ffn.gate.0.weight": (10240, 4096),
                "blocks.{i}.ffn.fc1.weight": (10240, 4096),
                "blocks.{i}.ffn.fc2.weight": (4096, 10240),
                "blocks.{i}.pos_embedding.embedding.weight": (32, 64),
            },
            24,
        ),
    },
    "t5-xxl": lambda: _t5(32128, per_block_bias=False),
    "byt5-small-glyph": _byt5,
    "clip-g": lambda: _clip_text(1280, 32),
    "clip-h": lambda: _clip_text(1024, 24),
    "clip-l": lambda: _clip_text(768, 12),
    "qwen3-vl-4b": lambda: _qwen3_vl(2560),
    "qwen3-vl-8b": lambda: _qwen3_vl(4096),
    "qwen25-vl-7b": lambda: {
        **_llm(3584, 28, 152064, kv=512, qkv_bias=True),
        "visual.patch_embed.proj.weight": (1280, 3, 2, 14, 14),
        "visual.merger.mlp.2.weight": (3584, 5120),
    },
    "qwen35-text": lambda: _qwen35(32, 4, 320),
    "qwen3-4b": lambda: _llm(2560, 36, 151936, kv=1024, q_norm=True),
    "qwen3-8b": lambda: _llm(4096, 36, 151936, kv=1024, q_norm=True),
    "mistral3-24b": lambda: {
        **_llm(5120, 40, 131072, kv=1024, prefix="language_model.model."),
        "vision_tower.transformer.layers.0.attention.q_proj.weight": (1024, 1024),
        "multi_modal_projector.linear_1.weight": (5120, 1024),
    },
    "llava-llama3-8b": lambda: _llm(4096, 32, 128320, kv=1024),
    "llama31-8b": lambda: _llm(4096, 32, 128256, kv=1024),
    "siglip-so400m": lambda: _vision(1152, 27, 729, "layer_norm1"),
    "wan-clip-xlm-roberta-vit-h": lambda: {
        "log_scale": (),
        "visual.patch_embedding.weight": (1280, 3, 14, 14),
        "visual.cls_embedding": (1, 1, 1280),
        "visual.pos_embedding": (1, 257, 1280),
        "visual.post_norm.weight": (1280,),
        **_blocks(
            {
                "visual.transformer.{i}.norm1.weight": (1280,),
                "visual.transformer.{i}.attn.to_qkv.weight": (3840, 1280),
                "visual.transformer.{i}.attn.proj.weight": (1280, 1280),
                "visual.transformer.{i}.mlp.0.weight": (5120, 1280),
            },
            32,
        ),
        "textual.token_embedding.weight": (250002, 1024),
        "textual.pos_embedding.weight": (514, 1024),
        **_blocks({"textual.blocks.{i}.attn.q.weight": (1024, 1024)}, 24),
    },
    "clip-vit-h-vision": lambda: {
        **_vision(1280, 32, 257, "layer_norm1"),
        "visual_projection.weight": (1024, 1280),
    },
}
