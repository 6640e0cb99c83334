"""Build Musubi Tuner's DiTs on the meta device and its network modules on them.

Run as a script (``python musubi_network_harness.py <musubi src dir> <plan.json>``) with
real ``torch`` and ``accelerate`` (``KURA_MUSUBI_DEPS`` may name a folder holding
``accelerate``, ``einops``, ``easydict``); missing optional packages are inert
placeholders, as in the parser harness. The plan's ``architectures`` map an architecture to
``{"version": <model version or null>, "modules": [<network module>, ...]}``; its
``shapes`` map an estimator shape id to ``{"architecture", "version", "module"}``.

Per architecture the DiT is built the way Musubi's own loader builds it before loading
weights (the same class, the same configuration object, under ``init_empty_weights`` or
``torch.device("meta")``), then every module's ``create_arch_network(1.0, 4, 4, None, None,
dit)`` runs as ``training/trainer_base.py`` calls it. A module that builds reports its
number of LoRA modules, its parameters per rank and a digest of their names; one that
raises reports the error. The same is done for every estimator shape (its model version's
DiT, the architecture's LoRA module), for the counts Kura's estimator assumes.
A DiT that cannot be built here reports why. It prints one JSON object.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import io
import json
import os
import pathlib
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout
from typing import Any


def _hunyuan_video(version: str | None) -> Any:
    from musubi_tuner.hunyuan_model import models

    # models.load_transformer: load_dit_model(...) under accelerate.init_empty_weights().
    factor = {"device": "meta", "dtype": None, "attn_mode": "torch", "split_attn": False}
    return models.load_dit_model(
        text_states_dim=4096,
        text_states_dim_2=768,
        in_channels=16,
        out_channels=16,
        factor_kwargs=factor,
    )


def _hunyuan_video_1_5(version: str | None) -> Any:
    from musubi_tuner.hunyuan_video_1_5 import hunyuan_video_1_5_models as hv15

    return hv15.create_model(
        task_type=version or "t2v", attn_mode="torch", split_attn=False, dtype=None
    )


def _wan(version: str | None) -> Any:
    from musubi_tuner.wan.configs import WAN_CONFIGS
    from musubi_tuner.wan.modules.model import WanModel

    config = WAN_CONFIGS[version or "t2v-14B"]
    # wan/modules/model.py load_wan_model (:1021-1035): the same call under
    # init_empty_weights(), every size from the task's config (WanModel's own defaults are
    # the 32-layer 1.3B-ish shape, not the 40-layer 14B).
    return WanModel(
        model_type="i2v" if config.i2v else ("flf2v" if config.flf2v else "t2v"),
        model_version="2.1" if not config.v2_2 else "2.2",
        dim=config.dim,
        eps=config.eps,
        ffn_dim=config.ffn_dim,
        freq_dim=config.freq_dim,
        in_dim=config.in_dim,
        num_heads=config.num_heads,
        num_layers=config.num_layers,
        out_dim=config.out_dim,
        text_len=config.text_len,
        attn_mode="torch",
        split_attn=False,
    )


def _framepack(version: str | None) -> Any:
    from musubi_tuner.frame_pack.hunyuan_video_packed import HunyuanVideoTransformer3DModelPacked

    # frame_pack/hunyuan_video_packed.py load_packed_model: the same arguments.
    return HunyuanVideoTransformer3DModelPacked(
        attention_head_dim=128,
        guidance_embeds=True,
        has_clean_x_embedder=True,
        has_image_proj=True,
        image_proj_dim=1152,
        in_channels=16,
        mlp_ratio=4.0,
        num_attention_heads=24,
        num_layers=20,
        num_refiner_layers=2,
        num_single_layers=40,
        out_channels=16,
        patch_size=2,
        patch_size_t=1,
        pooled_projection_dim=768,
        qk_norm="rms_norm",
        rope_axes_dim=(16, 56, 56),
        rope_theta=256.0,
        text_embed_dim=4096,
        attn_mode="torch",
        split_attn=False,
    )


def _flux_kontext(version: str | None) -> Any:
    from musubi_tuner.flux import flux_models

    return flux_models.Flux(flux_models.configs_flux_dev_context.params, "torch", False)


def _flux2(version: str | None) -> Any:
    from musubi_tuner.flux_2 import flux2_models, flux2_utils

    info = flux2_utils.FLUX2_MODEL_INFO[version or "dev"]
    return flux2_models.Flux2(info.params, "torch", False)


def _qwen_image(version: str | None) -> Any:
    from musubi_tuner.qwen_image import qwen_image_model

    return qwen_image_model.create_model(
        attn_mode="torch",
        split_attn=False,
        zero_cond_t=False,
        use_additional_t_cond=False,
        use_layer3d_rope=False,
        dtype=None,
    )


def _zimage(version: str | None) -> Any:
    from musubi_tuner.zimage import zimage_model

    return zimage_model.create_model("torch", False, None)


def _kandinsky5(version: str | None) -> Any:
    from musubi_tuner.kandinsky5.configs import TASK_CONFIGS
    from musubi_tuner.kandinsky5.models.dit import get_dit

    conf = dict(TASK_CONFIGS[version or "k5-pro-t2v-5s-sd"].dit_params.__dict__)
    conf.setdefault("attention_engine", "auto")  # kandinsky5_train_network._load_dit_config
    return get_dit(conf)


HIDREAM_O1_TEXT = {
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20]},
}
"""The Qwen3-VL-8B decoder Kura's estimator assumes for HiDream-O1 (``kura/sizing/shapes.py``
``hidream-o1``): Musubi reads the real one from the model repository's config.json, which
cannot be fetched offline, so this builds the model class Musubi builds at these sizes; the
check is of which modules Musubi's LoRA targets, the sizes are the estimator's own."""
HIDREAM_O1_VISION = {"out_hidden_size": 4096, "deepstack_visual_indexes": [8, 16, 24]}


def _hidream_o1(version: str | None) -> Any:
    if "transformers" in _MISSING:
        raise _CannotBuild(
            "HiDream-O1's DiT is transformers' Qwen3VLForConditionalGeneration built from "
            "Qwen3VLConfig.from_pretrained(<model repo>) (hidream_o1_utils."
            "load_single_checkpoint_model); transformers is not installed here"
        )
    import torch.nn as nn
    from musubi_tuner.hidream_o1.qwen3_vl_transformers import Qwen3VLForConditionalGeneration
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLConfig

    config = Qwen3VLConfig(text_config=HIDREAM_O1_TEXT, vision_config=HIDREAM_O1_VISION)
    # hidream_o1_utils.load_single_checkpoint_model (:89-94): the same model, the LM head
    # and the deepstack mergers dropped as the single checkpoints omit them.
    model = Qwen3VLForConditionalGeneration(config)
    model.lm_head = nn.Identity()
    model.model.visual.deepstack_visual_indexes = []
    model.model.visual.deepstack_merger_list = nn.ModuleList()
    model.hidream_o1_task = "t2i"
    return model


def _ideogram4(version: str | None) -> Any:
    from musubi_tuner.ideogram4.ideogram4_model import Ideogram4Config, Ideogram4Transformer

    return Ideogram4Transformer(Ideogram4Config(), attn_mode="torch", split_attn=False)


def _krea2(version: str | None) -> Any:
    from musubi_tuner.krea2.krea2_mmdit import SingleStreamDiT
    from musubi_tuner.krea2.krea2_utils import single_mmdit_large_wide

    return SingleStreamDiT(single_mmdit_large_wide, attn_mode="torch", split_attn=False)


BUILDERS = {
    "hunyuan_video": _hunyuan_video,
    "hunyuan_video_1_5": _hunyuan_video_1_5,
    "wan": _wan,
    "framepack": _framepack,
    "flux_kontext": _flux_kontext,
    "flux2": _flux2,
    "qwen_image": _qwen_image,
    "zimage": _zimage,
    "kandinsky5": _kandinsky5,
    "hidream_o1": _hidream_o1,
    "ideogram4": _ideogram4,
    "krea2": _krea2,
}


RANK = 4
"""The rank every network is built at (its parameters are rank x (in + out) per module)."""


class _CannotBuild(Exception):
    pass


_MISSING: set[str] = set()
"""The optional packages served as placeholders in this run."""


def _build_dit(architecture: str, version: str | None) -> Any:
    import torch
    from accelerate import init_empty_weights

    with init_empty_weights(), torch.device("meta"):
        return BUILDERS[architecture](version)


def _network(module_name: str, dit: Any) -> dict[str, Any]:
    module = importlib.import_module("musubi_tuner." + module_name)
    try:
        network = module.create_arch_network(1.0, RANK, RANK, None, None, dit)
    except Exception as exc:  # Musubi's refusal is the result being reported
        return {"built": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
    names = sorted(lora.lora_name for lora in network.unet_loras)
    # The LoRA weights of each module (lora_down/lora_up; networks/lora.py LoRAModule also
    # holds the original Linear as org_module until apply_to).
    parameters = sum(
        p.numel()
        for lora in network.unet_loras
        for name, p in lora.named_parameters()
        if not name.startswith("org_module")
    )
    return {
        "built": True,
        "lora_modules": len(names),
        "params_per_rank": parameters / RANK,
        "names_sha256": hashlib.sha256("\n".join(names).encode()).hexdigest(),
        "first_names": names[:3],
    }


def run(plan: dict[str, Any]) -> dict[str, Any]:
    """Every architecture's modules (``plan["architectures"]``) and every estimator shape's
    LoRA module and parameter counts (``plan["shapes"]``: shape id → architecture, model
    version and the architecture's LoRA module)."""
    return {
        "architectures": _architectures(plan["architectures"]),
        "shapes": _shapes(plan["shapes"]),
    }


def _shapes(plan: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for shape, entry in sorted(plan.items()):
        try:
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                dit = _build_dit(entry["architecture"], entry["version"])
                result = _network(entry["module"], dit)
        except _CannotBuild as exc:
            results[shape] = {**entry, "dit": f"not built: {exc}"}
            continue
        except Exception as exc:  # a failure to build is reported, with where
            trace = traceback.format_exc(limit=-3)
            results[shape] = {**entry, "dit": f"not built: {type(exc).__name__}: {exc}"}
            results[shape]["trace"] = trace
            continue
        results[shape] = {**entry, "dit": type(dit).__name__, **result}
        del dit
    return results


def _architectures(plan: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for architecture, entry in sorted(plan.items()):
        try:
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                dit = _build_dit(architecture, entry["version"])
        except _CannotBuild as exc:
            results[architecture] = {"version": entry["version"], "dit": f"not built: {exc}"}
            continue
        except Exception as exc:  # a failure to build is reported, with where
            trace = traceback.format_exc(limit=-3)
            results[architecture] = {
                "version": entry["version"],
                "dit": f"not built: {type(exc).__name__}: {exc}",
                "trace": trace,
            }
            continue
        result: dict[str, Any] = {
            "version": entry["version"],
            "dit": type(dit).__name__,
            "modules": {},
        }
        for module_name in entry["modules"]:
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                result["modules"][module_name] = _network(module_name, dit)
        results[architecture] = result
        del dit
    return results


def main() -> None:
    source, plan_path = sys.argv[1], sys.argv[2]
    extra = os.environ.get("KURA_MUSUBI_DEPS")
    if extra:
        sys.path.insert(0, extra)
    sys.path.insert(0, source)
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from musubi_semantics_harness import _OPTIONAL, _optional_finder

    missing = {name for name in _OPTIONAL if importlib.util.find_spec(name) is None}
    missing.discard("accelerate")
    _MISSING.update(missing)
    sys.meta_path.insert(0, _optional_finder(missing))
    import logging

    import torch

    torch.cuda.current_device = lambda: 0  # wan/modules/t5.py, at import time
    logging.disable(logging.WARNING)
    plan = json.loads(pathlib.Path(plan_path).read_text(encoding="utf-8"))
    print(json.dumps(run(plan), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
