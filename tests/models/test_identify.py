"""Identification by header: every component, prefixes, precision, shards, LoRA files."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from kura.errors import InvalidInput
from kura.models.identify import identify
from kura.models.layouts import (
    component_layout,
    known_layouts,
    write_component,
    write_sparse_safetensors,
)
from kura.models.signatures import ARCHITECTURES, COMPONENTS, ROLES

QUANT = {
    "bf16": "none",
    "fp16": "none",
    "fp8": "fp8",
    "fp8-scaled-comfy": "fp8-scaled-comfy",
    "nvfp4": "nvfp4",
}


def test_every_component_has_a_layout_and_is_well_formed() -> None:
    assert {c.id for c in COMPONENTS} == set(known_layouts())
    for component in COMPONENTS:
        assert component.role in ROLES
        assert all(a in ARCHITECTURES for a in component.architectures), component.id
        assert component.title
        assert component.source


@pytest.mark.parametrize("component_id", known_layouts())
@pytest.mark.parametrize("prefix", ["", "model.diffusion_model."])
def test_each_layout_is_identified(tmp_path: Path, component_id: str, prefix: str) -> None:
    report = identify(write_component(tmp_path / "f.safetensors", component_id, prefix=prefix))
    assert report.component == component_id
    assert report.key_prefix == prefix
    assert report.quantization == "none"
    assert report.dtype == "BF16"


@pytest.mark.parametrize(
    "component_id",
    ["flux2-klein-9b-dit", "wan-t2v-14b-dit", "qwen-image-dit", "qwen3-8b", "zimage-dit"],
)
@pytest.mark.parametrize("variant", ["fp16", "fp8", "fp8-scaled-comfy", "nvfp4"])
def test_precision_variants(tmp_path: Path, component_id: str, variant: str) -> None:
    report = identify(write_component(tmp_path / "f.safetensors", component_id, variant=variant))
    assert report.component == component_id
    assert report.quantization == QUANT[variant]
    if variant == "fp16":
        assert report.dtype == "F16"


def test_nvfp4_counts_logical_parameters(tmp_path: Path) -> None:
    plain = identify(write_component(tmp_path / "a.safetensors", "flux2-klein-4b-dit"))
    packed = identify(
        write_component(tmp_path / "b.safetensors", "flux2-klein-4b-dit", variant="nvfp4")
    )
    assert packed.params == plain.params
    assert packed.size < plain.size


def test_report_fields(tmp_path: Path) -> None:
    path = write_component(tmp_path / "ae.safetensors", "flux2-vae")
    report = identify(path)
    doc = report.to_dict()
    assert doc["component"] == "flux2-vae"
    assert doc["role"] == "vae"
    assert doc["architectures"] == ["flux2", "ideogram4", "moss_image"]
    assert doc["facts"] == {"latent_channels": 32}
    assert doc["size"] == path.stat().st_size
    assert doc["params"] > 0
    assert len(doc["header_digest"]) == 64
    json.dumps(doc)


def test_candidates_named_when_headers_cannot_tell(tmp_path: Path) -> None:
    dit = identify(write_component(tmp_path / "kontext.safetensors", "flux1-dit"))
    assert "FLUX.1 Kontext dev" in dit.candidates
    assert "FLUX.1 dev" in dit.candidates
    wan = identify(write_component(tmp_path / "high.safetensors", "wan-t2v-14b-dit"))
    assert "Wan 2.2 T2V A14B high-noise" in wan.candidates
    qwen = identify(write_component(tmp_path / "qwen.safetensors", "qwen-image-dit"))
    assert "Qwen-Image-Edit" in qwen.candidates


def test_file_name_is_ignored(tmp_path: Path) -> None:
    report = identify(write_component(tmp_path / "flux2-ae.safetensors", "flux1-ae"))
    assert report.component == "flux1-ae"


def test_unknown_file(tmp_path: Path) -> None:
    report = identify(
        write_sparse_safetensors(tmp_path / "x.safetensors", {"foo.weight": ("F32", [3, 3])})
    )
    assert (report.component, report.role, report.architectures) == ("unknown", "unknown", ())


def test_shards_are_read_together(tmp_path: Path) -> None:
    layout = component_layout("qwen3-8b")
    names = sorted(layout)
    half = len(names) // 2
    first = write_sparse_safetensors(
        tmp_path / "model-00001-of-00002.safetensors", {n: layout[n] for n in names[:half]}
    )
    second = write_sparse_safetensors(
        tmp_path / "model-00002-of-00002.safetensors", {n: layout[n] for n in names[half:]}
    )
    report = identify(first)
    assert report.component == "qwen3-8b"
    assert report.shards == (str(first), str(second))
    assert report.size == first.stat().st_size + second.stat().st_size
    second.unlink()
    with pytest.raises(InvalidInput, match=r"model-00002-of-00002\.safetensors is missing"):
        identify(first)


def _lora(prefix: str, down: str, up: str, *, alpha: bool, rank: int = 16) -> dict:
    tensors = {}
    for block in range(2):
        root = prefix.format(block=block)
        tensors[f"{root}{down}"] = ("BF16", [rank, 5120])
        tensors[f"{root}{up}"] = ("BF16", [5120, rank])
        if alpha:
            tensors[root.rstrip(".") + ".alpha"] = ("F32", [])
    return tensors


@pytest.mark.parametrize(
    ("tensors", "fmt", "archs"),
    [
        (
            _lora(
                "lora_unet_blocks_{block}_self_attn_q.",
                "lora_down.weight",
                "lora_up.weight",
                alpha=True,
            ),
            "musubi",
            ("wan",),
        ),
        (
            _lora(
                "diffusion_model.blocks.{block}.self_attn.q.",
                "lora_A.weight",
                "lora_B.weight",
                alpha=False,
            ),
            "comfyui",
            ("wan",),
        ),
        (
            _lora(
                "transformer.transformer_blocks.{block}.attn.add_q_proj.",
                "lora_A.weight",
                "lora_B.weight",
                alpha=False,
            ),
            "diffusers",
            ("qwen_image",),
        ),
        (
            _lora(
                "lora_unet_layers_{block}_attention_to_q.",
                "lora_down.weight",
                "lora_up.weight",
                alpha=True,
                rank=8,
            ),
            "musubi",
            ("zimage",),
        ),
    ],
)
def test_lora_formats(tmp_path: Path, tensors: dict, fmt: str, archs: tuple[str, ...]) -> None:
    report = identify(write_sparse_safetensors(tmp_path / "lora.safetensors", tensors))
    assert report.role == "lora"
    assert report.lora_format == fmt
    assert report.architectures == archs
    assert report.rank in (8, 16)


def test_lycoris_and_metadata_hint(tmp_path: Path) -> None:
    tensors = {
        "lora_unet_double_blocks_0_img_attn_qkv.hada_w1_a": ("BF16", [3072, 8]),
        "lora_unet_double_blocks_0_img_attn_qkv.hada_w1_b": ("BF16", [8, 3072]),
        "lora_unet_double_blocks_0_img_attn_qkv.hada_w2_a": ("BF16", [3072, 8]),
        "lora_unet_double_blocks_0_img_attn_qkv.hada_w2_b": ("BF16", [8, 3072]),
        "lora_unet_double_blocks_0_img_attn_qkv.alpha": ("F32", []),
    }
    report = identify(
        write_sparse_safetensors(
            tmp_path / "loha.safetensors", tensors, {"ss_base_model_version": "flux_2_klein_9b"}
        )
    )
    assert (report.lora_format, report.variant, report.architectures) == (
        "lycoris",
        "loha",
        ("flux2",),
    )


def test_flux_lora_width_separates_flux1_from_flux2(tmp_path: Path) -> None:
    def lora(width: int) -> dict:
        return {
            "lora_unet_single_blocks_0_linear1.lora_down.weight": ("BF16", [16, 3072]),
            "lora_unet_single_blocks_0_linear1.lora_up.weight": ("BF16", [width, 16]),
            "lora_unet_double_blocks_0_img_attn_qkv.lora_down.weight": ("BF16", [16, 3072]),
            "lora_unet_double_blocks_0_img_attn_qkv.lora_up.weight": ("BF16", [9216, 16]),
        }

    assert identify(
        write_sparse_safetensors(tmp_path / "a.safetensors", lora(21504))
    ).architectures == ("flux_kontext",)
    assert identify(
        write_sparse_safetensors(tmp_path / "b.safetensors", lora(27648))
    ).architectures == ("flux2",)


def test_bnb_4bit_detected_and_still_identified(tmp_path: Path) -> None:
    layout = component_layout("t5-xxl")
    name = "encoder.block.23.layer.1.DenseReluDense.wi_1.weight"
    layout[name] = ("U8", [20971520, 1])
    layout[f"{name}.absmax"] = ("F32", [655360])
    layout[f"{name}.quant_map"] = ("F32", [16])
    layout[f"{name}.quant_state.bitsandbytes__nf4"] = ("U8", [100])
    report = identify(write_sparse_safetensors(tmp_path / "t5.safetensors", layout))
    assert report.quantization == "bnb-4bit"
    assert report.component == "t5-xxl"


def test_comfy_mixed_formats_listed(tmp_path: Path) -> None:
    tensors = component_layout("zimage-dit")
    meta = {
        "_quantization_metadata": json.dumps(
            {"format_version": "1.0", "layers": {"layers.0.attention.qkv": {"format": "mxfp8"}}}
        )
    }
    report = identify(write_sparse_safetensors(tmp_path / "z.safetensors", tensors, meta))
    assert report.quantization == "mxfp8"
    assert report.quantization_formats == ("mxfp8",)


def test_all_in_one_checkpoint(tmp_path: Path) -> None:
    tensors = component_layout("flux1-dit", prefix="model.diffusion_model.")
    tensors |= component_layout("flux1-ae", prefix="vae.")
    tensors |= component_layout("clip-l", prefix="text_encoders.clip_l.transformer.")
    report = identify(write_sparse_safetensors(tmp_path / "aio.safetensors", tensors))
    assert report.component == "flux1-dit"
    assert report.key_prefix == "model.diffusion_model."
    assert any("all-in-one" in note for note in report.notes)


def test_text_encoder_inside_comfy_prefix(tmp_path: Path) -> None:
    tensors = component_layout("t5-xxl", prefix="text_encoders.t5xxl.transformer.")
    report = identify(write_sparse_safetensors(tmp_path / "t5.safetensors", tensors))
    assert (report.component, report.key_prefix) == ("t5-xxl", "text_encoders.t5xxl.transformer.")


def test_zimage_official_naming(tmp_path: Path) -> None:
    tensors = {
        "all_x_embedder.2-1.weight": ("BF16", [3840, 64]),
        "cap_embedder.0.weight": ("BF16", [2560]),
        "cap_embedder.1.weight": ("BF16", [3840, 2560]),
        "noise_refiner.0.attention.norm_k.weight": ("BF16", [128]),
        "layers.0.attention.to_q.weight": ("BF16", [3840, 3840]),
        "layers.0.adaLN_modulation.0.weight": ("BF16", [15360, 256]),
    }
    report = identify(write_sparse_safetensors(tmp_path / "z.safetensors", tensors))
    assert report.component == "zimage-dit"


def test_hidream_o1_bare_spelling(tmp_path: Path) -> None:
    tensors = {
        "t_embedder1.mlp.0.weight": ("BF16", [4096, 256]),
        "x_embedder.proj1.weight": ("BF16", [4096, 3072]),
    }
    report = identify(write_sparse_safetensors(tmp_path / "o1.safetensors", tensors))
    assert report.component == "hidream-o1-dit"


@pytest.mark.parametrize(
    ("component_id", "original"),
    [
        ("wan-umt5-xxl", "models_t5_umt5-xxl-enc-bf16.pth"),
        ("wan-clip-xlm-roberta-vit-h", "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth"),
        ("wan21-vae", "Wan2.1_VAE.pth"),
    ],
)
def test_safetensors_conversions_of_musubis_pth_files_are_identified(
    tmp_path: Path, component_id: str, original: str
) -> None:
    # Musubi's Wan loaders (wan/modules/t5.py, clip.py, vae.py) take a .safetensors file
    # with the original .pth's keys: each such conversion is known by header, for Wan.
    path = tmp_path / original.replace(".pth", ".safetensors")
    write_sparse_safetensors(path, component_layout(component_id))
    report = identify(path)
    assert report.component == component_id
    assert "wan" in report.architectures


def test_a_report_is_made_once_per_header_and_again_when_the_header_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    identify_module = importlib.import_module("kura.models.identify")
    made: list[str] = []
    real = identify_module.identify_header

    def counted(header: object, **kwargs: object) -> object:
        made.append(str(getattr(header, "path", "")))
        return real(header, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(identify_module, "identify_header", counted)
    path = write_component(tmp_path / "f.safetensors", "zimage-dit")
    first = identify(path)
    assert identify(path) is first
    assert len(made) == 1
    # rewritten in place, same name, same inode, possibly the same mtime: a new header
    other = write_component(tmp_path / "g.safetensors", "zimage-dit", variant="fp16")
    with open(path, "r+b") as handle:
        handle.write(other.read_bytes())
        handle.truncate(other.stat().st_size)
    assert identify(path).dtype == "F16"
    assert len(made) == 2
