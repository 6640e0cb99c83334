"""What AI-Toolkit puts on the GPU besides the DiT, per model class, and its weight formats.

The DiT's shape comes from :mod:`kura.sizing.shapes` (the same transformer Musubi trains).
Text encoders and VAEs are the ones the class files at 27a03a9 load (ai-toolkit.md §2b table,
the ``load_model`` of each class); parameter counts are the published model cards' ([ext])
unless marked [assumed]. ``[code] file:line`` is a line of
``/work/shared/trainers/ai-toolkit-27a03a9``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kura.errors import Unsupported

__all__ = [
    "ARA_RANK",
    "COMPONENTS",
    "SHAPE_FOR_BUNDLE",
    "Components",
    "components_for",
    "qtype_bytes",
]


@dataclass(frozen=True)
class Components:
    """The parts of one AI-Toolkit model class that are not the DiT."""

    text_encoder: str
    text_encoder_params_b: float
    vae_params_b: float
    video_vae: bool
    source: str
    quantizes_model: bool = True
    """Whether ``quantize`` / ``quantize_te`` reach this class's model and text encoder (the
    legacy SDXL class never quantizes either: toolkit/stable_diffusion_model.py:335-367
    loads them in the model dtype; its quantize calls, :428 and :452, are SD3's)."""
    attention_mask_heads: int = 0
    """Heads of the dense ``B x heads x L x L`` boolean attention mask the DiT builds in
    every forward (0: none)."""


_T5 = Components("T5-XXL encoder + CLIP-L", 4.76 + 0.12, 0.084, False, "[ext] HF model cards")
_QWEN_VL = Components(
    "Qwen2.5-VL-7B language model (visual tower dropped)",
    7.6,
    0.127,
    False,
    "[code] qwen_image/qwen_image.py:155-158 drops text_encoder.model.visual; [ext] 7.6 B",
)
_QWEN_VL_EDIT = Components(
    "Qwen2.5-VL-7B with its visual tower (controls pass through it)",
    8.3,
    0.127,
    False,
    "[code] qwen_image_edit*.py keep the visual tower (_qwen_image_keep_visual); [ext] 8.3 B",
)
_UMT5 = Components("UMT5-XXL encoder", 5.7, 0.127, True, "[ext] Wan 2.1 model card")
_QWEN3_4B = Components("Qwen3-4B", 4.0, 0.084, False, "ai-toolkit.md §2b; [ext] 4.0 B")
_QWEN3_8B = Components("Qwen3-8B", 8.2, 0.084, False, "ai-toolkit.md §2b; [ext] 8.2 B")
_QWEN3_VL = Components(
    "Qwen3-VL (size not stated by the class)", 8.0, 0.127, False, "ai-toolkit.md §2b; [assumed] 8 B"
)

COMPONENTS: Mapping[str, Components] = MappingProxyType(
    {
        "flux_kontext": _T5,
        "flux2": Components(
            "Mistral-Small-3.1-24B", 24.0, 0.084, False, "ai-toolkit.md §2b; [ext] 24 B"
        ),
        "flux2_klein_4b": _QWEN3_4B,
        "flux2_klein_9b": _QWEN3_8B,
        "qwen_image": _QWEN_VL,
        "qwen_image_edit": _QWEN_VL_EDIT,
        "qwen_image_edit_plus": _QWEN_VL_EDIT,
        "zimage": _QWEN3_4B,
        "wan21": _UMT5,
        "wan21_i2v": _UMT5,
        "wan22_14b": _UMT5,
        "wan22_14b_i2v": _UMT5,
        "wan22_5b": Components(
            "UMT5-XXL encoder", 5.7, 0.7, True, "[ext] Wan 2.2 VAE; [assumed] 0.7 B"
        ),
        "hidream_o1": Components(
            "none besides the DiT (one model reads text and image)",
            0.0,
            0.084,
            False,
            "[assumed] hidream_o1_model.py quantizes the DiT's language-model layers",
        ),
        "chroma": Components(
            "T5-XXL encoder (no CLIP: a stand-in)",
            4.76,
            0.084,
            False,
            "[code] chroma/chroma_model.py:197-216 (T5 from ostris/Flex.1-alpha, FakeCLIP), "
            ":222-227 (FLUX's AutoencoderKL); src/model.py:233-249 builds the mask with the "
            "DiT's 24 heads; [ext] 4.76 B",
            attention_mask_heads=24,
        ),
        "sdxl": Components(
            "CLIP ViT-L + OpenCLIP ViT-bigG text encoders",
            0.123 + 0.695,
            0.084,
            False,
            "[code] toolkit/stable_diffusion_model.py:335-367 (both encoders in the model "
            "dtype, never quantized); [ext] 123 M + 695 M, VAE 84 M",
            quantizes_model=False,
        ),
        "ideogram4": _QWEN3_VL,
        "krea2": _QWEN3_VL,
    }
)
"""AI-Toolkit ``model.arch`` → text encoder and VAE."""

SHAPE_FOR_BUNDLE: Mapping[str, str] = MappingProxyType(
    {
        "aitk-flux1-kontext-dev": "flux1-kontext-dev",
        "aitk-flux2-dev": "flux2-dev",
        "aitk-flux2-klein-base-4b": "flux2-klein-4b",
        "aitk-flux2-klein-base-9b": "flux2-klein-9b",
        "aitk-qwen-image": "qwen-image",
        "aitk-qwen-image-edit": "qwen-image",
        "aitk-qwen-image-edit-2509": "qwen-image",
        "aitk-qwen-image-edit-2511": "qwen-image",
        "aitk-zimage-base": "zimage",
        "aitk-wan2.1-t2v-14b": "wan2.1-t2v-14b",
        "aitk-wan2.1-t2v-1.3b": "wan2.1-1.3b",
        "aitk-wan2.1-i2v-14b": "wan2.1-i2v-14b",
        "aitk-wan2.2-t2v-a14b": "wan2.2-a14b-single",
        "aitk-wan2.2-i2v-a14b": "wan2.2-a14b-single",
        "aitk-wan2.2-ti2v-5b": "wan2.2-ti2v-5b",
        "aitk-hidream-o1": "hidream-o1",
        "aitk-ideogram4": "ideogram4",
        "aitk-krea2": "krea2",
        "chroma1-base": "chroma1",
        "sdxl-base-1.0": "sdxl-unet",
        "aitk-sdxl-base-1.0": "sdxl-unet",
    }
)
"""Kura's AI-Toolkit bundle → the DiT shape (``kura.sizing.shapes``). Wan 2.2 A14B is one
expert's shape: AI-Toolkit holds two, :mod:`.memory` counts the second. Chroma and SDXL's
UNet are ``kura.sizing.shapes.OTHER_TRAINER_SHAPES`` (no Musubi shape)."""

ARA_RANK = 16
"""Rank of ostris' accuracy-recovery adapters ([assumed]: the file's own ``lora_A`` rows set
it, [code] toolkit/util/quantize.py:328-334; the published adapters are small)."""

_QTYPE_BITS = {
    "qfloat8": 8,
    "float8": 8,
    "int8": 8,
    "qint8": 8,
    "uint8": 8,
    "uint7": 7,
    "uint6": 6,
    "uint5": 5,
    "qint4": 4,
    "uint4": 4,
    "uint3": 3,
}
GROUP_SCALE_BYTES = 4 / 128
"""Per weight, the scale and zero point of a 128-weight group for the sub-8-bit types
([assumed]: torchao's uintx and quanto's qint4 keep group-wise scales)."""


def qtype_bytes(qtype: str) -> float:
    """Bytes per weight of one of AI-Toolkit's quantized types (``toolkit/util/quantize.py``
    ``get_qtype``, [code] :65)."""
    bits = _QTYPE_BITS[qtype]
    return bits / 8 + (GROUP_SCALE_BYTES if bits < 8 else 0.0)


def components_for(arch: str) -> Components:
    try:
        return COMPONENTS[arch]
    except KeyError:
        raise Unsupported(
            f"Kura has no sizes for AI-Toolkit's {arch} text encoder and VAE",
            hint="plan with --accept-risk: this run is not sized",
        ) from None
