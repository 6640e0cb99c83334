"""The bundle table: for each trainable model, the files Musubi Tuner takes, per role.

This module is data (MOSS-Image's bundles are KohakuMoss's, ``backend: kohakumoss``; a
``folder`` role is a subfolder of a pipeline root whose safetensors are each checked by
header), read by :mod:`kura.models.bundles` (which validates it and renders
``docs/model-bundles.md``). One entry per bundle; each role names its recommended file
(Hugging Face repo + path in the repo), the component(s) its header must show, and where the
fact comes from. ``size`` and ``sha256`` stay ``None`` until a publisher's value is recorded:
Kura never invents digests. ``format`` is ``safetensors`` (checked by header), ``pickle``
(a ``.pt``/``.pth`` file Musubi needs; Kura checks only size and digest) or ``hf-repo`` (a
whole repository snapshot the trainer loads by id). ``confidence`` is ``doc`` when the
Musubi docs name the file, ``public-use`` when the docs name the repo and folder and the
file name is the one public download scripts use. :data:`NATIVE_RESOLUTIONS` (backend-neutral,
by bundle id) is the size(s) ``[width, height]`` the model was trained at, with its source:
``kura run new`` drafts a dataset's resolution from it when the dataset's own differs.
A role's ``dtype`` (optional: ``bf16``/``fp16``/``fp8``) is the weight dtype the recommended
file ships in (the Wan 2.2 repackaged DiTs are fp16), so a backend can draft to match it.

Sources: ``musubi §n`` is /work/shared/research/musubi.md (Musubi Tuner 0.3.4 docs/code);
``peers`` is peers.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BUNDLES", "ESTIMATOR_MODELS", "NATIVE_RESOLUTIONS"]

_FLUX2_AE = {
    "role": "vae",
    "repo": "black-forest-labs/FLUX.2-dev",
    "filename": "ae.safetensors",
    "components": ["flux2-vae"],
    "confidence": "doc",
    "sources": [
        "musubi §1.6 (docs/flux_2.md: AE is always the FLUX.2 ae.safetensors; vae/ subfolder is "
        "diffusers and cannot be used)"
    ],
}
_QWEN_TE = {
    "role": "text_encoder",
    "repo": "Comfy-Org/Qwen-Image_ComfyUI",
    "filename": "split_files/text_encoders/qwen_2.5_vl_7b.safetensors",
    "components": ["qwen25-vl-7b"],
    "confidence": "doc",
    "sources": ["musubi §1.7 (docs/qwen_image.md)"],
}
_QWEN_VAE = {
    "role": "vae",
    "repo": "Comfy-Org/Qwen-Image_ComfyUI",
    "filename": "split_files/vae/qwen_image_vae.safetensors",
    "components": ["wan21-vae"],
    "confidence": "doc",
    "sources": ["musubi §1.7 (docs/qwen_image.md)"],
}
_WAN_T5 = {
    "role": "text_encoder",
    "repo": "Wan-AI/Wan2.1-I2V-14B-720P",
    "filename": "models_t5_umt5-xxl-enc-bf16.pth",
    "format": "pickle",
    "components": [],
    "confidence": "doc",
    "note": "the original Wan T5 (pickle); ComfyUI's umt5_xxl safetensors does not load in Musubi",
    "sources": ["musubi §1.3 (docs/wan.md)", "model-signatures §5.2"],
}
_WAN_VAE = {
    "role": "vae",
    "repo": "Comfy-Org/Wan_2.1_ComfyUI_repackaged",
    "filename": "split_files/vae/wan_2.1_vae.safetensors",
    "components": ["wan21-vae"],
    "confidence": "doc",
    "alternatives": [
        {
            "repo": "Wan-AI/Wan2.1-I2V-14B-720P",
            "filename": "Wan2.1_VAE.pth",
            "note": "original pickle",
        }
    ],
    "sources": ["musubi §1.3 (docs/wan.md; Wan 2.2 14B also uses the Wan 2.1 VAE)"],
}
_WAN_CLIP = {
    "role": "image_encoder",
    "repo": "Wan-AI/Wan2.1-I2V-14B-720P",
    "filename": "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth",
    "format": "pickle",
    "components": [],
    "confidence": "doc",
    "note": "original open-clip XLM-RoBERTa ViT-H (pickle); "
    "ComfyUI's clip_vision_h does not load in Musubi",
    "sources": ["musubi §1.3 (docs/wan.md)", "model-signatures §5.4"],
}
_WAN21_REPO = "Comfy-Org/Wan_2.1_ComfyUI_repackaged"
_WAN22_REPO = "Comfy-Org/Wan_2.2_ComfyUI_Repackaged"
_WAN_DIT_SOURCES = [
    "musubi §1.3 (docs/wan.md: DiTs from the repo's split_files/diffusion_models)",
    "file name: public download scripts",
]
_HV_TE = {
    "role": "text_encoder",
    "repo": "Comfy-Org/HunyuanVideo_repackaged",
    "filename": "split_files/text_encoders/llava_llama3_fp16.safetensors",
    "components": ["llava-llama3-8b"],
    "confidence": "doc",
    "sources": ["musubi §1.2 (docs/hunyuan_video.md)", "musubi §1.4 (docs/framepack.md)"],
}
_HV_CLIP = {
    "role": "text_encoder",
    "repo": "Comfy-Org/HunyuanVideo_repackaged",
    "filename": "split_files/text_encoders/clip_l.safetensors",
    "components": ["clip-l"],
    "confidence": "doc",
    "sources": ["musubi §1.2 (docs/hunyuan_video.md)", "musubi §1.4 (docs/framepack.md)"],
}
_HV15_REPO = "Comfy-Org/HunyuanVideo_1.5_repackaged"


def _flux2(
    bundle_id: str,
    version: str,
    dit_repo: str,
    dit_file: str,
    te_repo: str,
    te_file: str,
    te_component: str,
    title: str,
    note: str = "",
) -> dict[str, Any]:
    return {
        "id": bundle_id,
        "title": title,
        "architecture": "flux2",
        "trainer": {"model_version": version},
        "note": note,
        "roles": {
            "dit": {
                "role": "dit",
                "repo": dit_repo,
                "filename": dit_file,
                "components": [f"flux2-{version.replace('base-', '')}-dit"],
                "confidence": "doc",
                "sources": ["musubi §1.6 (docs/flux_2.md)"],
            },
            "vae": _FLUX2_AE,
            "text_encoder": {
                "role": "text_encoder",
                "repo": te_repo,
                "filename": te_file,
                "components": [te_component],
                "confidence": "public-use",
                "note": "first shard of a set: download every shard; Musubi loads the siblings",
                "sources": [
                    "musubi §1.6 (docs/flux_2.md: all split files from the repo, pass the first)"
                ],
            },
        },
    }


def _wan(
    bundle_id: str,
    title: str,
    task: str,
    dit: str,
    component: str,
    *,
    repo: str,
    high: str | None = None,
    clip: bool = False,
    dtype: str | None = None,
) -> dict[str, Any]:
    roles: dict[str, Any] = {
        "dit": {
            "role": "dit",
            "repo": repo,
            "filename": f"split_files/diffusion_models/{dit}",
            "components": [component],
            "confidence": "public-use",
            "dtype": dtype,
            "sources": _WAN_DIT_SOURCES,
        },
    }
    if high:
        roles["dit_high_noise"] = {
            "role": "dit",
            "repo": repo,
            "filename": f"split_files/diffusion_models/{high}",
            "components": [component],
            "confidence": "public-use",
            "dtype": dtype,
            "sources": _WAN_DIT_SOURCES,
        }
    roles["vae"] = _WAN_VAE
    roles["text_encoder"] = _WAN_T5
    if clip:
        roles["image_encoder"] = _WAN_CLIP
    return {
        "id": bundle_id,
        "title": title,
        "architecture": "wan",
        "trainer": {"task": task},
        "roles": roles,
    }


def _qwen(
    bundle_id: str,
    title: str,
    version: str,
    repo: str,
    dit: str,
    component: str,
    vae: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": bundle_id,
        "title": title,
        "architecture": "qwen_image",
        "trainer": {"model_version": version},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": repo,
                "filename": f"split_files/diffusion_models/{dit}",
                "components": [component],
                "confidence": "doc",
                "alternatives": [
                    {
                        "repo": repo,
                        "filename": "(any *_fp8_scaled / *_fp8_e4m3fn / *fp8mixed file)",
                        "note": "cannot be used by Musubi",
                    }
                ],
                "sources": ["musubi §1.7 (docs/qwen_image.md)"],
            },
            "vae": vae or _QWEN_VAE,
            "text_encoder": _QWEN_TE,
        },
    }


def _hv15(bundle_id: str, title: str, task: str, variant: str) -> dict[str, Any]:
    roles: dict[str, Any] = {
        "dit": {
            "role": "dit",
            "repo": "tencent/HunyuanVideo-1.5",
            "filename": f"transformer/720p_{variant}/diffusion_pytorch_model.safetensors",
            "components": ["hunyuan-video-1.5-dit"],
            "confidence": "doc",
            "alternatives": [
                {
                    "repo": _HV15_REPO,
                    "filename": f"hunyuanvideo1.5_720p_{variant}_fp16.safetensors",
                    "note": "fp16: Musubi refuses to train it in bf16",
                }
            ],
            "sources": ["musubi §1.9 (docs/hunyuan_video_1_5.md)"],
        },
        "vae": {
            "role": "vae",
            "repo": "tencent/HunyuanVideo-1.5",
            "filename": "vae/diffusion_pytorch_model.safetensors",
            "components": ["hunyuan-video-1.5-vae"],
            "confidence": "doc",
            "alternatives": [
                {
                    "repo": _HV15_REPO,
                    "filename": "split_files/vae/hunyuanvideo15_vae_fp16.safetensors",
                    "note": "",
                }
            ],
            "sources": ["musubi §1.9 (named only in the Japanese section of the doc)"],
        },
        "text_encoder": {
            "role": "text_encoder",
            "repo": _HV15_REPO,
            "filename": "split_files/text_encoders/qwen_2.5_vl_7b.safetensors",
            "components": ["qwen25-vl-7b"],
            "confidence": "doc",
            "sources": ["musubi §1.9"],
        },
        "text_encoder_2": {
            "role": "text_encoder",
            "note": "the ByT5 glyph encoder (Musubi's --byt5)",
            "repo": _HV15_REPO,
            "filename": "split_files/text_encoders/byt5_small_glyphxl_fp16.safetensors",
            "components": ["byt5-small-glyph"],
            "confidence": "doc",
            "sources": ["musubi §1.9"],
        },
    }
    if task == "i2v":
        roles["image_encoder"] = {
            "role": "image_encoder",
            "repo": _HV15_REPO,
            "filename": "split_files/clip_vision/sigclip_vision_patch14_384.safetensors",
            "components": ["siglip-so400m"],
            "confidence": "doc",
            "sources": ["musubi §1.9"],
        }
    return {
        "id": bundle_id,
        "title": title,
        "architecture": "hunyuan_video_1_5",
        "trainer": {"task": task},
        "roles": roles,
    }


def _moss(bundle_id: str, title: str, variant: str, repo: str) -> dict[str, Any]:
    """A MOSS-Image pipeline root for KohakuMoss: each role is a subfolder of the repo
    snapshot (``model.root``), or a file/folder given per role in ``model.paths``."""
    source = (
        "kohakumoss §6 (WEIGHTS is a pipeline root: transformer/, text_encoder/ + tokenizer/, "
        "vae/, or a single DiT file)"
    )
    return {
        "id": bundle_id,
        "title": title,
        "architecture": "moss_image",
        "backend": "kohakumoss",
        "trainer": {"variant": variant},
        "roles": {
            "transformer": {
                "role": "dit",
                "repo": repo,
                "filename": "transformer",
                "format": "folder",
                "components": ["moss-image-dit", "moss-image-dit-custom"],
                "confidence": "doc",
                "note": "the diffusers transformer/ folder (shards + index) or one DiT file; "
                "another shape than the released one trains with its shape read from the header",
                "sources": [source],
            },
            "text_encoder": {
                "role": "text_encoder",
                "repo": repo,
                "filename": "text_encoder",
                "format": "folder",
                "components": ["qwen35-text"],
                "confidence": "doc",
                "note": "Qwen3.5 (15.63 GiB); its tokenizer/ folder sits beside it in the root",
                "sources": [source],
            },
            "vae": {
                "role": "vae",
                "repo": repo,
                "filename": "vae",
                "format": "folder",
                "components": ["flux2-vae", "flux2-vae-custom"],
                "confidence": "doc",
                "note": "the FLUX.2 VAE in diffusers layout (AutoencoderKLFlux2)",
                "sources": [source],
            },
        },
    }


BUNDLES: list[dict[str, Any]] = [
    {
        "id": "hunyuan-video",
        "title": "HunyuanVideo T2V 720p",
        "architecture": "hunyuan_video",
        "trainer": {},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "tencent/HunyuanVideo",
                "filename": "hunyuan-video-t2v-720p/transformers/mp_rank_00_model_states.pt",
                "format": "pickle",
                "components": [],
                "confidence": "doc",
                "alternatives": [
                    {
                        "repo": "kohya-ss/HunyuanVideo-fp8_e4m3fn-unofficial",
                        "filename": "mp_rank_00_model_states_fp8.safetensors",
                        "note": "fp8 e4m3fn, for --fp8_base",
                    }
                ],
                "sources": ["musubi §1.2 (docs/hunyuan_video.md)"],
            },
            "vae": {
                "role": "vae",
                "repo": "tencent/HunyuanVideo",
                "filename": "hunyuan-video-t2v-720p/vae/pytorch_model.pt",
                "format": "pickle",
                "components": [],
                "confidence": "doc",
                "sources": ["musubi §1.2 (docs/hunyuan_video.md)"],
            },
            "text_encoder": _HV_TE,
            "text_encoder_2": _HV_CLIP,
        },
    },
    _hv15("hunyuan-video-1.5-t2v", "HunyuanVideo 1.5 T2V 720p", "t2v", "t2v"),
    _hv15("hunyuan-video-1.5-i2v", "HunyuanVideo 1.5 I2V 720p", "i2v", "i2v"),
    _wan(
        "wan2.1-t2v-14b",
        "Wan 2.1 T2V 14B",
        "t2v-14B",
        "wan2.1_t2v_14B_bf16.safetensors",
        "wan-t2v-14b-dit",
        repo=_WAN21_REPO,
    ),
    _wan(
        "wan2.1-t2v-1.3b",
        "Wan 2.1 T2V 1.3B",
        "t2v-1.3B",
        "wan2.1_t2v_1.3B_bf16.safetensors",
        "wan21-t2v-1.3b-dit",
        repo=_WAN21_REPO,
    ),
    _wan(
        "wan2.1-i2v-14b",
        "Wan 2.1 I2V 14B 480p",
        "i2v-14B",
        "wan2.1_i2v_480p_14B_bf16.safetensors",
        "wan21-i2v-14b-dit",
        repo=_WAN21_REPO,
        clip=True,
    ),
    _wan(
        "wan2.2-t2v-a14b",
        "Wan 2.2 T2V A14B (low- and high-noise experts)",
        "t2v-A14B",
        "wan2.2_t2v_low_noise_14B_fp16.safetensors",
        "wan-t2v-14b-dit",
        repo=_WAN22_REPO,
        high="wan2.2_t2v_high_noise_14B_fp16.safetensors",
        dtype="fp16",
    ),
    _wan(
        "wan2.2-i2v-a14b",
        "Wan 2.2 I2V A14B (low- and high-noise experts)",
        "i2v-A14B",
        "wan2.2_i2v_low_noise_14B_fp16.safetensors",
        "wan22-i2v-a14b-dit",
        repo=_WAN22_REPO,
        high="wan2.2_i2v_high_noise_14B_fp16.safetensors",
        dtype="fp16",
    ),
    {
        "id": "wan2.2-ti2v-5b",
        "title": "Wan 2.2 TI2V 5B",
        "architecture": "wan",
        "trainer": {},
        "supported": False,
        "note": "Musubi Tuner 0.3.4 has no ti2v-5B task (issues #554/#696); "
        "listed so Kura can say so",
        "roles": {
            "dit": {
                "role": "dit",
                "repo": _WAN22_REPO,
                "filename": "split_files/diffusion_models/wan2.2_ti2v_5B_fp16.safetensors",
                "components": ["wan22-ti2v-5b-dit"],
                "confidence": "public-use",
                "sources": ["musubi §1.0 (not supported)", "file name: public download scripts"],
            },
        },
    },
    {
        "id": "framepack",
        "title": "FramePack I2V (HunyuanVideo-based)",
        "architecture": "framepack",
        "trainer": {},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "lllyasviel/FramePackI2V_HY",
                "filename": "diffusion_pytorch_model-00001-of-00003.safetensors",
                "components": ["framepack-dit"],
                "confidence": "doc",
                "note": "first shard of three: download all; Musubi loads the siblings",
                "alternatives": [
                    {
                        "repo": "Kijai/HunyuanVideo_comfy",
                        "filename": "FramePackI2V_HY_bf16.safetensors",
                        "note": "single file",
                    }
                ],
                "sources": ["musubi §1.4 (docs/framepack.md)"],
            },
            "vae": {
                "role": "vae",
                "repo": "hunyuanvideo-community/HunyuanVideo",
                "filename": "vae/diffusion_pytorch_model.safetensors",
                "components": ["hunyuan-video-vae"],
                "confidence": "doc",
                "sources": ["musubi §1.4 (docs/framepack.md)"],
            },
            "text_encoder": _HV_TE,
            "text_encoder_2": _HV_CLIP,
            "image_encoder": {
                "role": "image_encoder",
                "repo": "Comfy-Org/sigclip_vision_384",
                "filename": "sigclip_vision_patch14_384.safetensors",
                "components": ["siglip-so400m"],
                "confidence": "doc",
                "alternatives": [
                    {
                        "repo": "lllyasviel/flux_redux_bfl",
                        "filename": "image_encoder/model.safetensors",
                        "note": "",
                    }
                ],
                "sources": ["musubi §1.4 (docs/framepack.md)"],
            },
        },
    },
    {
        "id": "flux1-kontext-dev",
        "title": "FLUX.1 Kontext [dev]",
        "architecture": "flux_kontext",
        "trainer": {},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "black-forest-labs/FLUX.1-Kontext-dev",
                "filename": "flux1-kontext-dev.safetensors",
                "components": ["flux1-dit"],
                "confidence": "doc",
                "sources": ["musubi §1.5 (docs/flux_kontext.md)"],
            },
            "vae": {
                "role": "vae",
                "repo": "black-forest-labs/FLUX.1-Kontext-dev",
                "filename": "ae.safetensors",
                "components": ["flux1-ae"],
                "confidence": "doc",
                "sources": ["musubi §1.5 (docs/flux_kontext.md)"],
            },
            "text_encoder": {
                "role": "text_encoder",
                "repo": "comfyanonymous/flux_text_encoders",
                "filename": "t5xxl_fp16.safetensors",
                "components": ["t5-xxl"],
                "confidence": "doc",
                "sources": ["musubi §1.5 (docs/flux_kontext.md)"],
            },
            "text_encoder_2": {
                "role": "text_encoder",
                "repo": "comfyanonymous/flux_text_encoders",
                "filename": "clip_l.safetensors",
                "components": ["clip-l"],
                "confidence": "doc",
                "sources": ["musubi §1.5 (docs/flux_kontext.md)"],
            },
        },
    },
    _flux2(
        "flux2-dev",
        "dev",
        "black-forest-labs/FLUX.2-dev",
        "flux2-dev.safetensors",
        "black-forest-labs/FLUX.2-dev",
        "text_encoder/model-00001-of-00010.safetensors",
        "mistral3-24b",
        "FLUX.2 [dev]",
    ),
    _flux2(
        "flux2-klein-base-4b",
        "klein-base-4b",
        "black-forest-labs/FLUX.2-klein-base-4B",
        "flux2-klein-base-4b.safetensors",
        "black-forest-labs/FLUX.2-klein-4B",
        "text_encoder/model-00001-of-00002.safetensors",
        "qwen3-4b",
        "FLUX.2 [klein] base 4B (recommended for training)",
    ),
    _flux2(
        "flux2-klein-4b",
        "klein-4b",
        "black-forest-labs/FLUX.2-klein-4B",
        "flux2-klein-4b.safetensors",
        "black-forest-labs/FLUX.2-klein-4B",
        "text_encoder/model-00001-of-00002.safetensors",
        "qwen3-4b",
        "FLUX.2 [klein] 4B (distilled)",
        note="Musubi's docs recommend training on the base model",
    ),
    _flux2(
        "flux2-klein-base-9b",
        "klein-base-9b",
        "black-forest-labs/FLUX.2-klein-base-9B",
        "flux2-klein-base-9b.safetensors",
        "black-forest-labs/FLUX.2-klein-9B",
        "text_encoder/model-00001-of-00004.safetensors",
        "qwen3-8b",
        "FLUX.2 [klein] base 9B (recommended for training)",
    ),
    _flux2(
        "flux2-klein-9b",
        "klein-9b",
        "black-forest-labs/FLUX.2-klein-9B",
        "flux2-klein-9b.safetensors",
        "black-forest-labs/FLUX.2-klein-9B",
        "text_encoder/model-00001-of-00004.safetensors",
        "qwen3-8b",
        "FLUX.2 [klein] 9B (distilled)",
        note="Musubi's docs recommend training on the base model",
    ),
    _qwen(
        "qwen-image",
        "Qwen-Image",
        "original",
        "Comfy-Org/Qwen-Image_ComfyUI",
        "qwen_image_bf16.safetensors",
        "qwen-image-dit",
    ),
    _qwen(
        "qwen-image-edit",
        "Qwen-Image-Edit",
        "edit",
        "Comfy-Org/Qwen-Image-Edit_ComfyUI",
        "qwen_image_edit_bf16.safetensors",
        "qwen-image-dit",
    ),
    _qwen(
        "qwen-image-edit-2509",
        "Qwen-Image-Edit-2509",
        "edit-2509",
        "Comfy-Org/Qwen-Image-Edit_ComfyUI",
        "qwen_image_edit_2509_bf16.safetensors",
        "qwen-image-dit",
    ),
    _qwen(
        "qwen-image-edit-2511",
        "Qwen-Image-Edit-2511",
        "edit-2511",
        "Comfy-Org/Qwen-Image-Edit_ComfyUI",
        "qwen_image_edit_2511_bf16.safetensors",
        "qwen-image-edit-2511-dit",
    ),
    _qwen(
        "qwen-image-layered",
        "Qwen-Image-Layered",
        "layered",
        "Comfy-Org/Qwen-Image-Layered_ComfyUI",
        "qwen_image_layered_bf16.safetensors",
        "qwen-image-layered-dit",
        vae={
            "role": "vae",
            "repo": "Comfy-Org/Qwen-Image-Layered_ComfyUI",
            "filename": "split_files/vae/qwen_image_layered_vae.safetensors",
            "components": ["qwen-image-layered-vae"],
            "confidence": "doc",
            "sources": ["musubi §1.7 (docs/qwen_image.md)"],
        },
    ),
    {
        "id": "zimage-base",
        "title": "Z-Image (Base; recommended for training)",
        "architecture": "zimage",
        "trainer": {},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "Tongyi-MAI/Z-Image",
                "filename": "transformer/diffusion_pytorch_model-00001-of-00002.safetensors",
                "components": ["zimage-dit"],
                "confidence": "public-use",
                "note": "first shard: download both; Musubi loads the siblings",
                "sources": [
                    "musubi §1.8 (docs/zimage.md: Tongyi-MAI/Z-Image shards, pass the first)",
                    "file name: public download scripts",
                ],
            },
            "vae": {
                "role": "vae",
                "repo": "Comfy-Org/z_image_turbo",
                "filename": "split_files/vae/ae.safetensors",
                "components": ["flux1-ae"],
                "confidence": "public-use",
                "sources": [
                    "musubi §1.8 (GUI uses vae/ae.safetensors from Comfy-Org/z_image_turbo)",
                    "file name: public download scripts",
                ],
            },
            "text_encoder": {
                "role": "text_encoder",
                "repo": "Comfy-Org/z_image_turbo",
                "filename": "split_files/text_encoders/qwen_3_4b.safetensors",
                "components": ["qwen3-4b"],
                "confidence": "public-use",
                "sources": [
                    "musubi §1.8 (GUI uses text_encoders/qwen_3_4b.safetensors)",
                    "file name: public download scripts",
                ],
            },
        },
    },
    {
        "id": "zimage-turbo",
        "title": "Z-Image Turbo (trained through the De-Turbo DiT)",
        "architecture": "zimage",
        "trainer": {},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "ostris/Z-Image-De-Turbo",
                "filename": "z_image_de_turbo_v1_bf16.safetensors",
                "components": ["zimage-dit"],
                "confidence": "doc",
                "alternatives": [
                    {
                        "repo": "Comfy-Org/z_image_turbo",
                        "filename": "split_files/diffusion_models/z_image_turbo_bf16.safetensors",
                        "note": "Turbo itself: train with "
                        "ostris/zimage_turbo_training_adapter via --base_weights",
                    }
                ],
                "sources": ["musubi §1.8 (docs/zimage.md)"],
            },
            "vae": {
                "role": "vae",
                "repo": "Comfy-Org/z_image_turbo",
                "filename": "split_files/vae/ae.safetensors",
                "components": ["flux1-ae"],
                "confidence": "public-use",
                "sources": ["musubi §1.8", "file name: public download scripts"],
            },
            "text_encoder": {
                "role": "text_encoder",
                "repo": "Comfy-Org/z_image_turbo",
                "filename": "split_files/text_encoders/qwen_3_4b.safetensors",
                "components": ["qwen3-4b"],
                "confidence": "public-use",
                "sources": ["musubi §1.8", "file name: public download scripts"],
            },
        },
    },
    {
        "id": "kandinsky5-pro-t2v-5s",
        "title": "Kandinsky 5 Video Pro T2V 5s (SFT)",
        "architecture": "kandinsky5",
        "trainer": {"task": "k5-pro-t2v-5s-sd"},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "kandinskylab/Kandinsky-5.0-T2V-Pro-sft-5s",
                "filename": "model/kandinsky5pro_t2v_sft_5s.safetensors",
                "components": ["kandinsky5-video-pro-dit"],
                "confidence": "public-use",
                "sources": [
                    "musubi §1.10 (docs/kandinsky5.md names "
                    "kandinsky5pro_t2v_sft_5s.safetensors in kandinskylab/Kandinsky-5.0-* repos)"
                ],
            },
            "vae": {
                "role": "vae",
                "repo": "hunyuanvideo-community/HunyuanVideo",
                "filename": "vae/diffusion_pytorch_model.safetensors",
                "components": ["hunyuan-video-vae"],
                "confidence": "doc",
                "sources": ["musubi §1.10 (docs/kandinsky5.md)"],
            },
            "text_encoder": {
                "role": "text_encoder",
                "repo": "Qwen/Qwen2.5-VL-7B-Instruct",
                "filename": None,
                "format": "hf-repo",
                "components": [],
                "confidence": "doc",
                "sources": ["musubi §1.10 (TEs are Hugging Face models by id or local snapshot)"],
            },
            "text_encoder_2": {
                "role": "text_encoder",
                "repo": "openai/clip-vit-large-patch14",
                "filename": None,
                "format": "hf-repo",
                "components": [],
                "confidence": "doc",
                "sources": ["musubi §1.10"],
            },
        },
    },
    {
        "id": "krea2",
        "title": "Krea 2 (train on Raw)",
        "architecture": "krea2",
        "trainer": {},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "krea/Krea-2-Raw",
                "filename": "raw.safetensors",
                "components": ["krea2-dit"],
                "confidence": "doc",
                "gated": True,
                "alternatives": [
                    {
                        "repo": "krea/Krea-2-Turbo",
                        "filename": "turbo.safetensors",
                        "note": "for sampling (--turbo_dit), not training",
                    }
                ],
                "sources": [
                    "musubi §1.13 (docs/krea2.md)",
                    "gated: peers §problems (perfectgf/lora-dataset-studio #16)",
                ],
            },
            "vae": {
                "role": "vae",
                "repo": "Comfy-Org/Qwen-Image-Edit_ComfyUI",
                "filename": "split_files/vae/qwen_image_vae.safetensors",
                "components": ["wan21-vae"],
                "confidence": "doc",
                "sources": ["musubi §1.13 (docs/krea2.md)"],
            },
            "text_encoder": {
                "role": "text_encoder",
                "repo": "Comfy-Org/Qwen3-VL",
                "filename": "text_encoders/qwen3vl_4b_bf16.safetensors",
                "components": ["qwen3-vl-4b"],
                "confidence": "doc",
                "sources": ["musubi §1.13 (docs/krea2.md)"],
            },
        },
    },
    {
        "id": "hidream-o1",
        "title": "HiDream-O1-Image (full)",
        "architecture": "hidream_o1",
        "trainer": {"model_type": "full"},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "Comfy-Org/HiDream-O1-Image",
                "filename": "checkpoints/hidream_o1_image_bf16.safetensors",
                "components": ["hidream-o1-dit"],
                "confidence": "doc",
                "sources": ["musubi §1.11 (docs/hidream_o1.md)"],
            },
        },
    },
    {
        "id": "hidream-o1-dev",
        "title": "HiDream-O1-Image dev",
        "architecture": "hidream_o1",
        "trainer": {"model_type": "dev"},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "Comfy-Org/HiDream-O1-Image",
                "filename": "checkpoints/hidream_o1_image_dev_bf16.safetensors",
                "components": ["hidream-o1-dit"],
                "confidence": "doc",
                "sources": ["musubi §1.11 (docs/hidream_o1.md)"],
            },
        },
    },
    {
        "id": "ideogram4",
        "title": "Ideogram 4 (fp8 conditional DiT)",
        "architecture": "ideogram4",
        "trainer": {},
        "note": "non-commercial licence; the DiT exists only as ComfyUI fp8_scaled weights",
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "Comfy-Org/Ideogram-4",
                "filename": "diffusion_models/ideogram4_fp8_scaled.safetensors",
                "components": [],
                "confidence": "doc",
                "license": "non-commercial",
                "note": "Kura has no header signature for the Ideogram 4 DiT: "
                "checked as well-formed safetensors only",
                "sources": ["musubi §1.12 (docs/ideogram4.md)"],
            },
            "vae": {
                "role": "vae",
                "repo": "Comfy-Org/Ideogram-4",
                "filename": "vae/flux2-vae.safetensors",
                "components": ["flux2-vae"],
                "confidence": "doc",
                "license": "non-commercial",
                "sources": ["musubi §1.12 (docs/ideogram4.md)"],
            },
            "text_encoder": {
                "role": "text_encoder",
                "repo": "Comfy-Org/Ideogram-4",
                "filename": "text_encoders/qwen3vl_8b_fp8_scaled.safetensors",
                "components": [],
                "confidence": "doc",
                "license": "non-commercial",
                "note": "key layout of this ComfyUI fp8 build not verified: "
                "checked as well-formed safetensors only",
                "sources": ["musubi §1.12 (docs/ideogram4.md)"],
            },
        },
    },
    _moss(
        "moss-image-base",
        "MOSS-Image Base (5B bilingual DiT, Qwen3.5 text encoder, FLUX.2 VAE)",
        "base",
        "OpenMOSS-Team/MOSS-Image-Base",
    ),
    _moss(
        "moss-image-sft",
        "MOSS-Image SFT (the instruction-tuned MOSS-Image)",
        "sft",
        "OpenMOSS-Team/MOSS-Image-SFT",
    ),
]


ESTIMATOR_MODELS: dict[str, str] = {
    "hunyuan-video": "hunyuan-video",
    "hunyuan-video-1.5-t2v": "hunyuan-video-1.5",
    "hunyuan-video-1.5-i2v": "hunyuan-video-1.5",
    "wan2.1-t2v-14b": "wan2.1-t2v-14b",
    "wan2.1-t2v-1.3b": "wan2.1-1.3b",
    "wan2.1-i2v-14b": "wan2.1-i2v-14b",
    "wan2.2-t2v-a14b": "wan2.2-a14b",
    "wan2.2-i2v-a14b": "wan2.2-a14b",
    "wan2.2-ti2v-5b": "wan2.2-ti2v-5b",
    "framepack": "framepack",
    "flux1-kontext-dev": "flux1-kontext-dev",
    "flux2-dev": "flux2-dev",
    "flux2-klein-base-4b": "flux2-klein-4b",
    "flux2-klein-4b": "flux2-klein-4b",
    "flux2-klein-base-9b": "flux2-klein-9b",
    "flux2-klein-9b": "flux2-klein-9b",
    "qwen-image": "qwen-image",
    "qwen-image-edit": "qwen-image",
    "qwen-image-edit-2509": "qwen-image",
    "qwen-image-edit-2511": "qwen-image",
    "qwen-image-layered": "qwen-image",
    "zimage-base": "zimage",
    "zimage-turbo": "zimage",
    "kandinsky5-pro-t2v-5s": "kandinsky5-pro-video",
    "krea2": "krea2",
    "hidream-o1": "hidream-o1",
    "hidream-o1-dev": "hidream-o1",
    "ideogram4": "ideogram4",
}
"""Bundle id → the memory/step-time estimator's model id (Musubi's estimator shapes)."""

_WAN_SIZES = "Musubi 0.3.4 wan/configs/__init__.py SUPPORTED_SIZES"
_720P = [[1280, 720], [720, 1280]]
_480P = [[832, 480], [480, 832]]

NATIVE_RESOLUTIONS: dict[str, dict[str, Any]] = {
    "hunyuan-video": {
        "sizes": _720P,
        "source": "docs/hunyuan_video.md: the DiT is tencent/HunyuanVideo hunyuan-video-t2v-720p",
    },
    "hunyuan-video-1.5-t2v": {
        "sizes": _720P,
        "source": "docs/hunyuan_video_1_5.md: transformer/720p_t2v DiT ('720p (1280x720)')",
    },
    "hunyuan-video-1.5-i2v": {
        "sizes": _720P,
        "source": "docs/hunyuan_video_1_5.md: transformer/720p_i2v DiT ('720p (1280x720)')",
    },
    "wan2.1-t2v-14b": {"sizes": _720P + _480P, "source": f"{_WAN_SIZES}['t2v-14B']"},
    "wan2.1-t2v-1.3b": {"sizes": _480P, "source": f"{_WAN_SIZES}['t2v-1.3B']"},
    "wan2.1-i2v-14b": {
        "sizes": _480P,
        "source": f"{_WAN_SIZES}['i2v-14B'] at the bundle's 480p DiT (wan2.1_i2v_480p_14B)",
    },
    "wan2.2-t2v-a14b": {"sizes": _720P + _480P, "source": f"{_WAN_SIZES}['t2v-A14B']"},
    "wan2.2-i2v-a14b": {"sizes": _720P + _480P, "source": f"{_WAN_SIZES}['i2v-A14B']"},
    "wan2.2-ti2v-5b": {
        "sizes": [[1280, 704], [704, 1280]],
        "source": f"{_WAN_SIZES}['ti2v-5B']",
    },
    "framepack": {
        "sizes": [[640, 640]],
        "source": "docs/framepack.md: 'The default resolution for FramePack is 640x640' "
        "(frame_pack/bucket_tools.py bucket_options[640])",
    },
    "flux1-kontext-dev": {
        "sizes": [
            [w, h]
            for w, h in (
                (672, 1568),
                (688, 1504),
                (720, 1456),
                (752, 1392),
                (800, 1328),
                (832, 1248),
                (880, 1184),
                (944, 1104),
                (1024, 1024),
                (1104, 944),
                (1184, 880),
                (1248, 832),
                (1328, 800),
                (1392, 752),
                (1456, 720),
                (1504, 688),
                (1568, 672),
            )
        ],
        "source": "Musubi 0.3.4 flux/flux_utils.py PREFERED_KONTEXT_RESOLUTIONS (copied from "
        "black-forest-labs/flux src/flux/util.py)",
    },
    **{
        bundle_id: {
            "sizes": [[1024, 1024]],
            "source": "Musubi 0.3.4 flux_2_generate_image.py --image_size default [1024, 1024] "
            "(no training resolution is documented; FLUX.2 takes other sizes)",
        }
        for bundle_id in (
            "flux2-dev",
            "flux2-klein-base-4b",
            "flux2-klein-4b",
            "flux2-klein-base-9b",
            "flux2-klein-9b",
        )
    },
    "qwen-image": {
        "sizes": [[1328, 1328]],
        "source": "Musubi 0.3.4 gui/config_manager.py Qwen-Image preset resolution (1328, 1328) "
        "(musubi.md GUI presets); utils/sai_model_spec.py uses 1328x1328 for Qwen-Image",
    },
    **{
        bundle_id: {
            "sizes": [[1024, 1024]],
            "source": "Musubi 0.3.4 qwen_image/qwen_image_utils.py VAE_IMAGE_RESOLUTION = "
            "(1024, 1024) for Edit images; docs/qwen_image.md recommends control_resolution "
            "1024x1024",
        }
        for bundle_id in ("qwen-image-edit", "qwen-image-edit-2509", "qwen-image-edit-2511")
    },
    **{
        bundle_id: {
            "sizes": [[1024, 1024]],
            "source": "Musubi 0.3.4 zimage/zimage_config.py DEFAULT_WIDTH/DEFAULT_HEIGHT 1024; "
            "gui/config_manager.py Z-Image preset resolution (1024, 1024)",
        }
        for bundle_id in ("zimage-base", "zimage-turbo")
    },
    "kandinsky5-pro-t2v-5s": {
        "sizes": [[512, 512]],
        "source": "Musubi 0.3.4 kandinsky5/configs.py: TASK_CONFIGS['k5-pro-t2v-5s-sd'] "
        "resolution=512, scale_factor=[1.0, 2.0, 2.0] (the RoPE scale of the 512-px '-sd' task)",
    },
    "krea2": {
        "sizes": [[1024, 1024]],
        "source": "docs/krea2.md: shift 2.5 'matches the K2 inference time-shift at 1024x1024'; "
        "krea2/krea2_sampling.py width/height default 1024",
    },
    **{
        bundle_id: {
            "sizes": [[2048, 2048]],
            "source": "docs/hidream_o1.md examples --image_size 2048 2048 ('high resolutions "
            "such as 2048x2048'); hidream_o1_generate_image.py --image_size default 2048",
        }
        for bundle_id in ("hidream-o1", "hidream-o1-dev")
    },
    "ideogram4": {
        "sizes": [[1024, 1024]],
        "source": "Musubi 0.3.4 ideogram4_generate_image.py --image_size default [1024, 1024]",
    },
}
"""Bundle id → the size(s) ``[width, height]`` the model is trained or meant to run at, with
its source (``kura run new`` drafts a dataset's resolution from it). Qwen-Image-Layered has no
documented size in Musubi 0.3.4 or the research notes, so it has none."""


# ---- AI-Toolkit bundles (appended) -----------------------------------------------------
# AI-Toolkit loads whole diffusers-layout repositories by id (``model.name_or_path``) for
# every registered DiT class, and SDXL / Chroma from one single-file checkpoint; its text
# encoders, VAEs and adapters come from the Hub by repository id at run time. Sources:
# ``aitk`` is /work/shared/research/ai-toolkit.md §2b (ostris/ai-toolkit 27a03a9), the
# repository being the UI preset in ui/src/app/jobs/new/options.tsx.


def _aitk_repo(
    bundle_id: str, title: str, architecture: str, arch: str, repo: str, gated: bool = False
) -> dict[str, Any]:
    return {
        "id": bundle_id,
        "title": title,
        "architecture": architecture,
        "backend": "ai-toolkit",
        "trainer": {"arch": arch},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": repo,
                "filename": None,
                "format": "hf-repo",
                "components": [],
                "confidence": "doc",
                "gated": gated or None,
                "note": "the whole diffusers repository (transformer, text encoder, VAE); "
                "AI-Toolkit reads its sub-folders",
                "sources": [f"aitk §2b (options.tsx preset of arch {arch})"],
            },
        },
    }


BUNDLES += [
    _aitk_repo(
        "aitk-flux1-kontext-dev",
        "FLUX.1 Kontext [dev] (AI-Toolkit)",
        "flux_kontext",
        "flux_kontext",
        "black-forest-labs/FLUX.1-Kontext-dev",
        gated=True,
    ),
    _aitk_repo(
        "aitk-flux2-dev",
        "FLUX.2 [dev] (AI-Toolkit)",
        "flux2",
        "flux2",
        "black-forest-labs/FLUX.2-dev",
        gated=True,
    ),
    _aitk_repo(
        "aitk-flux2-klein-base-4b",
        "FLUX.2 [klein] base 4B (AI-Toolkit)",
        "flux2",
        "flux2_klein_4b",
        "black-forest-labs/FLUX.2-klein-base-4B",
    ),
    _aitk_repo(
        "aitk-flux2-klein-base-9b",
        "FLUX.2 [klein] base 9B (AI-Toolkit)",
        "flux2",
        "flux2_klein_9b",
        "black-forest-labs/FLUX.2-klein-base-9B",
        gated=True,
    ),
    _aitk_repo(
        "aitk-qwen-image", "Qwen-Image (AI-Toolkit)", "qwen_image", "qwen_image", "Qwen/Qwen-Image"
    ),
    _aitk_repo(
        "aitk-qwen-image-edit",
        "Qwen-Image-Edit (AI-Toolkit)",
        "qwen_image",
        "qwen_image_edit",
        "Qwen/Qwen-Image-Edit",
    ),
    _aitk_repo(
        "aitk-qwen-image-edit-2509",
        "Qwen-Image-Edit-2509 (AI-Toolkit)",
        "qwen_image",
        "qwen_image_edit_plus",
        "Qwen/Qwen-Image-Edit-2509",
    ),
    _aitk_repo(
        "aitk-qwen-image-edit-2511",
        "Qwen-Image-Edit-2511 (AI-Toolkit)",
        "qwen_image",
        "qwen_image_edit_plus",
        "Qwen/Qwen-Image-Edit-2511",
    ),
    _aitk_repo(
        "aitk-zimage-base", "Z-Image Base (AI-Toolkit)", "zimage", "zimage", "Tongyi-MAI/Z-Image"
    ),
    _aitk_repo(
        "aitk-wan2.1-t2v-14b",
        "Wan 2.1 T2V 14B (AI-Toolkit)",
        "wan",
        "wan21",
        "Wan-AI/Wan2.1-T2V-14B-Diffusers",
    ),
    _aitk_repo(
        "aitk-wan2.1-t2v-1.3b",
        "Wan 2.1 T2V 1.3B (AI-Toolkit)",
        "wan",
        "wan21",
        "Wan-AI/Wan2.1-T2V-1.3B-Diffusers",
    ),
    _aitk_repo(
        "aitk-wan2.1-i2v-14b",
        "Wan 2.1 I2V 14B 480p (AI-Toolkit)",
        "wan",
        "wan21_i2v",
        "Wan-AI/Wan2.1-I2V-14B-480P-Diffusers",
    ),
    _aitk_repo(
        "aitk-wan2.2-t2v-a14b",
        "Wan 2.2 T2V A14B, both experts (AI-Toolkit)",
        "wan",
        "wan22_14b",
        "ai-toolkit/Wan2.2-T2V-A14B-Diffusers-bf16",
    ),
    _aitk_repo(
        "aitk-wan2.2-i2v-a14b",
        "Wan 2.2 I2V A14B, both experts (AI-Toolkit)",
        "wan",
        "wan22_14b_i2v",
        "ai-toolkit/Wan2.2-I2V-A14B-Diffusers-bf16",
    ),
    _aitk_repo(
        "aitk-wan2.2-ti2v-5b",
        "Wan 2.2 TI2V 5B (AI-Toolkit)",
        "wan",
        "wan22_5b",
        "Wan-AI/Wan2.2-TI2V-5B-Diffusers",
    ),
    _aitk_repo(
        "aitk-hidream-o1",
        "HiDream-O1-Image (AI-Toolkit)",
        "hidream_o1",
        "hidream_o1",
        "HiDream-ai/HiDream-O1-Image",
    ),
    _aitk_repo(
        "aitk-ideogram4",
        "Ideogram 4 fp8 (AI-Toolkit)",
        "ideogram4",
        "ideogram4",
        "ideogram-ai/ideogram-4-fp8",
    ),
    _aitk_repo(
        "aitk-krea2", "Krea 2 Raw (AI-Toolkit)", "krea2", "krea2", "krea/Krea-2-Raw", gated=True
    ),
    {
        "id": "sdxl-base-1.0",
        "title": "Stable Diffusion XL base 1.0 (AI-Toolkit only)",
        "architecture": "sdxl",
        "backend": "ai-toolkit",
        "trainer": {"arch": "sdxl"},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "stabilityai/stable-diffusion-xl-base-1.0",
                "filename": "sd_xl_base_1.0.safetensors",
                "components": ["sdxl-unet"],
                "confidence": "public-use",
                "note": "the single-file checkpoint (UNet, VAE and both CLIPs); AI-Toolkit "
                "loads it with StableDiffusionXLPipeline.from_single_file",
                "sources": [
                    "aitk §2b (legacy sdxl; toolkit/stable_diffusion_model.py from_single_file "
                    "for a local .safetensors)",
                    "file name: the repository's single-file checkpoint",
                ],
            },
        },
    },
    {
        "id": "aitk-sdxl-base-1.0",
        "title": "Stable Diffusion XL base 1.0, diffusers folder (AI-Toolkit only)",
        "architecture": "sdxl",
        "backend": "ai-toolkit",
        "trainer": {"arch": "sdxl"},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "stabilityai/stable-diffusion-xl-base-1.0",
                "filename": None,
                "format": "hf-repo",
                "components": [],
                "confidence": "doc",
                "note": "a diffusers pipeline folder (model_index.json, unet/, text_encoder/, "
                "text_encoder_2/, tokenizer/, tokenizer_2/, vae/, scheduler/): AI-Toolkit "
                "loads a folder with StableDiffusionXLPipeline.from_pretrained, with no hub "
                "access when the folder is complete; a LoRA exported to ComfyUI is checked "
                "against its unet/ header",
                "sources": [
                    "aitk §2b (legacy sdxl; toolkit/stable_diffusion_model.py:343 loads a "
                    "folder with from_pretrained, a file with from_single_file)"
                ],
            },
        },
    },
    {
        "id": "chroma1-base",
        "title": "Chroma1-Base (AI-Toolkit only)",
        "architecture": "chroma",
        "backend": "ai-toolkit",
        "trainer": {"arch": "chroma"},
        "roles": {
            "dit": {
                "role": "dit",
                "repo": "lodestones/Chroma1-Base",
                "filename": "Chroma1-Base.safetensors",
                "components": ["chroma-dit"],
                "confidence": "doc",
                "note": "T5 and VAE come from ostris/Flex.1-alpha at run time",
                "sources": [
                    "aitk §2b (chroma preset lodestones/Chroma1-Base; chroma_model.py downloads "
                    "<repo name>.safetensors for lodestones/Chroma1-* and loads a local file)"
                ],
            },
        },
    },
]
