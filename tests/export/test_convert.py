"""Key-format conversion and verification, per architecture, on generated Musubi LoRAs."""

from __future__ import annotations

import numpy as np
import pytest

from kura.errors import CheckFailed, Unsupported
from kura.export.convert import convert_lora, resolve_musubi, to_musubi
from kura.export.formats import ARCHITECTURES, COMFYUI, comfy_rule
from kura.export.layout import base_modules
from kura.export.lorakeys import group_modules
from kura.export.verify import target_layout, verify_lora
from kura.models.layouts import component_layout
from tests.export.lorafiles import COMPONENT, base_shapes, delta, musubi_lora

COMFY_READY = [a for a in COMPONENT if COMFYUI[a].mode != "unsupported"]


def modules_for(architecture: str) -> dict:
    return base_modules(base_shapes(architecture), architecture)


def test_every_architecture_has_a_comfyui_rule_with_a_source() -> None:
    # MOSS-Image LoRAs are KohakuMoss's own ComfyUI files, checked and copied, not converted.
    assert set(COMFYUI) == set(ARCHITECTURES) - {"moss_image"}
    for rule in COMFYUI.values():
        assert rule.source
        if rule.mode == "unsupported":
            assert rule.hint


def test_unknown_architecture_is_refused() -> None:
    with pytest.raises(Unsupported, match="pixart"):
        comfy_rule("pixart")


@pytest.mark.parametrize("architecture", list(COMPONENT))
@pytest.mark.parametrize("fmt", ["musubi", "diffusers", "comfyui"])
def test_conversion_verifies_against_the_base_layout(architecture: str, fmt: str) -> None:
    modules = modules_for(architecture)
    tensors = musubi_lora(architecture)
    if fmt == "comfyui" and COMFYUI[architecture].mode == "unsupported":
        with pytest.raises(Unsupported, match=architecture):
            target_layout(architecture, fmt, modules)
        return
    style, layout = target_layout(architecture, fmt, modules)
    result = convert_lora(tensors, architecture, fmt, modules)
    report = verify_lora(result.tensors, style, layout)
    assert report.ok, report.to_dict()
    assert report.keys == len(result.tensors)
    if result.copied:
        assert set(result.tensors) == set(tensors)
    for key, value in result.tensors.items():
        assert value.dtype.name == "bfloat16", key


@pytest.mark.parametrize("architecture", ["wan", "flux_kontext", "flux2", "qwen_image"])
def test_comfyui_copies_where_musubi_names_already_load(architecture: str) -> None:
    tensors = musubi_lora(architecture)
    result = convert_lora(tensors, architecture, "comfyui", modules_for(architecture))
    assert result.copied and result.mode == "copy"
    assert all(np.array_equal(result.tensors[k], v) for k, v in tensors.items())


def test_zimage_comfyui_fuses_qkv_and_renames_out() -> None:
    modules = modules_for("zimage")
    tensors = musubi_lora("zimage", rank=2, alpha=1.0)
    result = convert_lora(tensors, "zimage", "comfyui", modules)
    out = result.tensors
    assert not result.copied
    assert "lora_unet_layers_0_attention_qkv.lora_down.weight" in out
    assert "lora_unet_layers_0_attention_out.lora_up.weight" in out
    assert not any("to_q" in k or "to_out" in k for k in out)
    down = out["lora_unet_layers_0_attention_qkv.lora_down.weight"]
    up = out["lora_unet_layers_0_attention_qkv.lora_up.weight"]
    assert down.shape == (6, 3840) and up.shape == (11520, 6)
    alpha = float(out["lora_unet_layers_0_attention_qkv.alpha"].astype(np.float32))
    assert alpha == 3.0
    fused = delta(down, up, alpha)
    for index, part in enumerate(("to_q", "to_k", "to_v")):
        root = f"lora_unet_layers_0_attention_{part}"
        own = delta(tensors[root + ".lora_down.weight"], tensors[root + ".lora_up.weight"], 1.0)
        np.testing.assert_allclose(fused[index * 3840 : (index + 1) * 3840], own, rtol=1e-6)
    back = to_musubi(out, "zimage", "comfyui", modules)
    assert set(back) == set(tensors)
    for key, value in tensors.items():
        np.testing.assert_array_equal(back[key].astype(np.float32), value.astype(np.float32))


def test_zimage_comfyui_refuses_a_partial_qkv() -> None:
    tensors = {k: v for k, v in musubi_lora("zimage").items() if "layers_1_attention_to_k" not in k}
    with pytest.raises(CheckFailed, match=r"layers\.1\.attention\.to_k"):
        convert_lora(tensors, "zimage", "comfyui", modules_for("zimage"))


def test_hunyuan_video_1_5_comfyui_renames_like_musubis_converter() -> None:
    out = convert_lora(
        musubi_lora("hunyuan_video_1_5"),
        "hunyuan_video_1_5",
        "comfyui",
        modules_for("hunyuan_video_1_5"),
    ).tensors
    roots = set(group_modules(out, "musubi"))
    assert "lora_unet_double_blocks_0_img_attn_qkv" in roots
    assert "lora_unet_double_blocks_0_img_mlp_0" in roots
    assert not any(r.endswith(("_img_attn_q", "_img_mlp_fc1")) for r in roots)


def test_hunyuan_video_comfyui_is_the_diffusion_pipe_layout() -> None:
    out = convert_lora(
        musubi_lora("hunyuan_video"), "hunyuan_video", "comfyui", modules_for("hunyuan_video")
    ).tensors
    assert "diffusion_model.double_blocks.0.img_mlp.fc1.lora_A.weight" in out
    assert "diffusion_model.double_blocks.0.img_attn_qkv.lora_B.weight" in out
    assert not any(k.endswith(".alpha") for k in out)


@pytest.mark.parametrize("architecture", ["wan", "zimage", "qwen_image", "krea2"])
def test_diffusers_folds_alpha_and_round_trips(architecture: str) -> None:
    modules = modules_for(architecture)
    tensors = musubi_lora(architecture, rank=4, alpha=2.0, dtype=np.float32)
    out = convert_lora(tensors, architecture, "diffusers", modules).tensors
    assert all(k.startswith("diffusion_model.") for k in out)
    assert not any(k.endswith(".alpha") for k in out)
    for path, module in resolve_musubi(tensors, modules).items():
        a = out[f"diffusion_model.{path}.lora_A.weight"]
        b = out[f"diffusion_model.{path}.lora_B.weight"]
        np.testing.assert_allclose(
            delta(a, b, None), delta(module.down, module.up, 2.0), rtol=1e-5, atol=1e-7
        )
    back = to_musubi(out, architecture, "diffusers", modules)
    assert set(back) == set(tensors)
    for root, module in group_modules(back, "musubi").items():
        original = group_modules(tensors, "musubi")[root]
        assert float(module.alpha) == 4.0
        np.testing.assert_allclose(
            delta(module.down, module.up, 4.0),
            delta(original.down, original.up, 2.0),
            rtol=1e-5,
            atol=1e-7,
        )


def test_wrong_architecture_names_the_unmapped_keys() -> None:
    with pytest.raises(CheckFailed, match="lora_unet_blocks_0_self_attn_q") as caught:
        convert_lora(musubi_lora("wan"), "zimage", "comfyui", modules_for("zimage"))
    assert "lora_unet_blocks_0_self_attn_q" in caught.value.unmapped  # type: ignore[attr-defined]


def test_a_module_missing_from_the_base_is_unmapped() -> None:
    shapes = base_shapes("wan")
    del shapes["blocks.1.ffn.0.weight"]
    modules = base_modules(shapes, "wan")
    with pytest.raises(CheckFailed) as caught:
        convert_lora(musubi_lora("wan"), "wan", "comfyui", modules)
    assert caught.value.unmapped == ["lora_unet_blocks_1_ffn_0"]  # type: ignore[attr-defined]


def test_shape_mismatch_is_reported() -> None:
    tensors = musubi_lora("wan")
    tensors["lora_unet_blocks_0_ffn_0.lora_down.weight"] = np.zeros((2, 1536), np.float32)
    style, layout = target_layout("wan", "comfyui", modules_for("wan"))
    report = verify_lora(tensors, style, layout)
    assert not report.ok
    assert report.unmapped == []
    assert any("blocks_0_ffn_0: down [2, 1536]" in m for m in report.mismatches)


def test_smaller_model_of_the_same_family_is_refused() -> None:
    layout = component_layout("wan21-t2v-1.3b-dit")
    small = base_modules({n: tuple(shape) for n, (_, shape) in layout.items()}, "wan")
    style, target = target_layout("wan", "musubi", small)
    report = verify_lora(musubi_lora("wan"), style, target)
    assert report.mismatches and not report.ok


def test_loha_is_copied_but_not_converted() -> None:
    tensors = musubi_lora("wan", limit=1)
    tensors["lora_unet_blocks_0_ffn_2.hada_w1_a"] = np.zeros((5120, 2), np.float32)
    result = convert_lora(tensors, "wan", "musubi", modules_for("wan"))
    assert result.copied
    with pytest.raises(Unsupported, match="hada_w1_a"):
        convert_lora(tensors, "wan", "diffusers", modules_for("wan"))
