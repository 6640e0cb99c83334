"""AI-Toolkit's PEFT LoRA keys through ``kura export``'s conversion, verified against the
base model's modules (the same path Musubi's files take once read back)."""

from __future__ import annotations

import numpy as np
import pytest

from kura.backends.registry import get_backend
from kura.errors import CheckFailed
from kura.export.convert import convert_lora, to_musubi
from kura.export.layout import base_modules
from kura.export.verify import target_layout, verify_lora
from kura.models.layouts import component_layout


def _modules() -> dict[str, object]:
    shapes = {k: tuple(shape) for k, (_, shape) in component_layout("qwen-image-dit").items()}
    return base_modules(shapes, "qwen_image")  # type: ignore[return-value]


def _peft(paths: list[str], modules: dict[str, object], rank: int = 4) -> dict[str, np.ndarray]:
    tensors: dict[str, np.ndarray] = {}
    for path in paths:
        module = modules[path]
        out_dim, in_dim = module.out_features, module.in_features  # type: ignore[attr-defined]
        tensors[f"diffusion_model.{path}.lora_A.weight"] = np.ones((rank, in_dim), np.float16)
        tensors[f"diffusion_model.{path}.lora_B.weight"] = np.zeros((out_dim, rank), np.float16)
    return tensors


def test_aitk_files_are_read_as_peft_and_export_to_comfyui() -> None:
    modules = _modules()
    paths = [p for p in sorted(modules) if p.startswith("transformer_blocks.0.")][:3]
    tensors = _peft(paths, modules)
    backend = get_backend("ai-toolkit")
    layout = backend.lora_layout(tuple(tensors), "qwen_image")
    assert layout == "diffusers"
    assert get_backend("musubi-tuner").lora_layout(tuple(tensors), "qwen_image") == "musubi"
    canonical = to_musubi(tensors, "qwen_image", layout, modules)  # type: ignore[arg-type]
    alphas = [v for k, v in canonical.items() if k.endswith(".alpha")]
    assert alphas and all(float(a) == 4.0 for a in alphas)  # PEFT: alpha = rank
    conversion = convert_lora(canonical, "qwen_image", "comfyui", modules)  # type: ignore[arg-type]
    style, target = target_layout("qwen_image", "comfyui", modules)  # type: ignore[arg-type]
    report = verify_lora(conversion.tensors, style, target)
    assert report.ok, report.to_dict()


def test_a_key_the_base_does_not_have_is_refused() -> None:
    modules = _modules()
    tensors = _peft(sorted(modules)[:1], modules)
    tensors["diffusion_model.not_a_block.lora_A.weight"] = np.ones((4, 8), np.float16)
    tensors["diffusion_model.not_a_block.lora_B.weight"] = np.ones((8, 4), np.float16)
    with pytest.raises(CheckFailed, match="not_a_block"):
        to_musubi(tensors, "qwen_image", "diffusers", modules)  # type: ignore[arg-type]


# -- SDXL: AI-Toolkit's kohya names, checked against the diffusers UNet, copied --------------

UNET = {
    "down_blocks.1.attentions.0.proj_in.weight": (64, 64),
    "down_blocks.1.attentions.0.transformer_blocks.0.attn2.to_k.weight": (64, 64),
    "mid_block.attentions.0.proj_out.weight": (64, 64, 1, 1),
    "conv_in.weight": (32, 4, 3, 3),
    "down_blocks.1.attentions.0.norm.weight": (64,),
}


def _kohya(
    module: str, out_in: tuple[int, int], conv: bool = False, rank: int = 4
) -> dict[str, tuple[int, ...]]:
    tail = (1, 1) if conv else ()
    return {
        f"lora_unet_{module}.lora_down.weight": (rank, out_in[1], *tail),
        f"lora_unet_{module}.lora_up.weight": (out_in[0], rank, *tail),
        f"lora_unet_{module}.alpha": (),
    }


def test_the_unet_layers_a_lora_adapts_are_its_linears_and_1x1_convs() -> None:
    from kura.backends.aitoolkit.sdxl_export import unet_linears

    layers = unet_linears(UNET)
    assert set(layers) == {
        "down_blocks_1_attentions_0_proj_in",
        "down_blocks_1_attentions_0_transformer_blocks_0_attn2_to_k",
        "mid_block_attentions_0_proj_out",
    }
    assert layers["mid_block_attentions_0_proj_out"].conv is True


def test_an_sdxl_lora_that_fits_the_unet_passes() -> None:
    from kura.backends.aitoolkit.sdxl_export import check_sdxl_lora, unet_linears

    tensors = {
        **_kohya("down_blocks_1_attentions_0_proj_in", (64, 64)),
        **_kohya("mid_block_attentions_0_proj_out", (64, 64), conv=True),
    }
    verdict = check_sdxl_lora(tensors, unet_linears(UNET))
    assert verdict.problems == () and (verdict.modules, verdict.keys, verdict.rank) == (2, 6, 4)


def test_an_sdxl_lora_of_another_unet_is_refused_by_module() -> None:
    from kura.backends.aitoolkit.sdxl_export import check_sdxl_lora, unet_linears

    tensors = {
        **_kohya("down_blocks_1_attentions_0_proj_in", (64, 32)),  # in 32, the base has 64
        **_kohya("up_blocks_0_attentions_0_proj_in", (64, 64)),  # not in the base
        "lora_te1_text_model_encoder_layers_0_mlp_fc1.lora_down.weight": (4, 32),
    }
    problems = check_sdxl_lora(tensors, unet_linears(UNET)).problems
    assert any(p.startswith("down_blocks_1_attentions_0_proj_in: down [4, 32]") for p in problems)
    missing = "up_blocks_0_attentions_0_proj_in: the base UNet has no such Linear"
    assert any(p.startswith(missing) for p in problems)
    assert any(p.startswith("lora_te1_") for p in problems)
