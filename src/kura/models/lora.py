"""Recognise LoRA files: adapter format, rank, alpha and the architectures they target.

A file is a LoRA when nearly all of its tensors carry an adapter suffix (model-signatures
§8.1). The format comes from the key roots (§8.2): ``lora_unet_``/``lora_te*_`` is the
Musubi/kohya format, ``diffusion_model.`` ComfyUI's, ``transformer.``/``base_model.model.``
or bare ``lora_A``/``lora_B`` keys diffusers/PEFT, LoHa/LoKr keys LyCORIS. The targeted
architectures come from the trainer's metadata when present, else from module names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from kura.models.header import TensorInfo
from kura.models.signatures import LORA_TARGETS

__all__ = ["LoraFacts", "detect_lora"]

_SUFFIX_RE = re.compile(
    r"^(?P<root>.+?)[._](?P<suffix>"
    r"lora_(?:up|down|mid)\.weight|lora_[AB](?:\.default)?\.weight|lora_[AB]"
    r"|lora\.(?:up|down)\.weight|lora_linear_layer\.(?:up|down)\.weight"
    r"|alpha|dora_scale|hada_w[12]_[ab]|hada_t[12]|lokr_w[12](?:_[ab])?|lokr_t2|diff|diff_b)$"
)
_DOWN = (
    "lora_down.weight",
    "lora_A.weight",
    "lora_A.default.weight",
    "lora_A",
    "lora.down.weight",
    "lora_linear_layer.down.weight",
)
_UP = (
    "lora_up.weight",
    "lora_B.weight",
    "lora_B.default.weight",
    "lora_B",
    "lora.up.weight",
    "lora_linear_layer.up.weight",
)
_BASE_MODEL_VERSIONS = {
    "hunyuan_video": "hunyuan_video",
    "hunyuan_video_1_5": "hunyuan_video_1_5",
    "wan": "wan",
    "framepack": "framepack",
    "flux_kontext": "flux_kontext",
    "flux_2_dev": "flux2",
    "flux_2_klein_4b": "flux2",
    "flux_2_klein_9b": "flux2",
    "qwen_image": "qwen_image",
    "qwen_image_edit": "qwen_image",
    "qwen_image_layered": "qwen_image",
    "kandinsky5": "kandinsky5",
    "z_image": "zimage",
    "hidream_o1_image": "hidream_o1",
    "ideogram4": "ideogram4",
    "krea2": "krea2",
}
_FLUX_WIDTHS = {21504: ("flux_kontext",), 55296: ("flux2",), 36864: ("flux2",), 27648: ("flux2",)}


@dataclass(frozen=True)
class LoraFacts:
    format: str
    algorithm: str
    prefix: str
    rank: int | None
    alpha: float | None
    modules: int
    architectures: tuple[str, ...]
    notes: tuple[str, ...]


def detect_lora(tensors: Mapping[str, TensorInfo], metadata: Mapping[str, str]) -> LoraFacts | None:
    """LoRA facts for an adapter file, or None when the file is not a LoRA."""
    if not tensors:
        return None
    parsed = {name: _SUFFIX_RE.match(name) for name in tensors}
    adapter = {name: m for name, m in parsed.items() if m is not None}
    if len(adapter) < 0.9 * len(tensors) or not any(
        m["suffix"] in _DOWN or m["suffix"].startswith(("hada_", "lokr_")) for m in adapter.values()
    ):
        return None
    roots = {m["root"] for m in adapter.values()}
    suffixes = {m["suffix"] for m in adapter.values()}
    algorithm = (
        "loha"
        if any(s.startswith("hada_") for s in suffixes)
        else "lokr"
        if any(s.startswith("lokr_") for s in suffixes)
        else "lora"
    )
    fmt, prefix = _format(roots, algorithm)
    ranks: Counter[int] = Counter()
    up_width: dict[str, int] = {}
    for name, m in adapter.items():
        info = tensors[name]
        if m["suffix"] in _DOWN and info.shape:
            ranks[info.shape[0]] += 1
        if m["suffix"] in _UP and info.shape:
            up_width[m["root"]] = info.shape[0]
    alphas = [name for name, m in adapter.items() if m["suffix"] == "alpha"]
    notes: list[str] = []
    if len(ranks) > 1:
        notes.append(f"modules use several ranks: {sorted(ranks)}")
    alpha = _alpha_from_metadata(metadata) if alphas else None
    if fmt in ("comfyui", "diffusers") and not alphas and algorithm == "lora":
        notes.append(
            "no alpha tensors: alpha equals the rank (the usual musubi convert_lora --target "
            "other output)"
        )
    return LoraFacts(
        format=fmt,
        algorithm=algorithm,
        prefix=prefix,
        rank=ranks.most_common(1)[0][0] if ranks else None,
        alpha=alpha,
        modules=len(roots),
        architectures=_targets(roots, prefix, up_width, metadata),
        notes=tuple(notes),
    )


def _format(roots: set[str], algorithm: str) -> tuple[str, str]:
    def share(prefixes: tuple[str, ...]) -> bool:
        return sum(r.startswith(prefixes) for r in roots) > len(roots) / 2

    if share(("lora_unet_", "lora_te_", "lora_te1_", "lora_te2_")):
        return ("musubi" if algorithm == "lora" else "lycoris"), "lora_unet_"
    if algorithm != "lora":
        return "lycoris", ""
    if share(("diffusion_model.",)):
        return "comfyui", "diffusion_model."
    if share(("transformer.",)):
        return "diffusers", "transformer."
    if share(("base_model.model.",)):
        return "diffusers", "base_model.model."
    if share(("lycoris_",)):
        return "lycoris", "lycoris_"
    return "diffusers", ""


def _alpha_from_metadata(metadata: Mapping[str, str]) -> float | None:
    try:
        return float(metadata["ss_network_alpha"])
    except (KeyError, ValueError):
        return None


def _targets(
    roots: set[str], prefix: str, up_width: Mapping[str, int], metadata: Mapping[str, str]
) -> tuple[str, ...]:
    hinted = _BASE_MODEL_VERSIONS.get(metadata.get("ss_base_model_version", ""))
    if hinted:
        return (hinted,)
    paths = {
        root: re.sub(r"[._]+", "_", root[len(prefix) :] if root.startswith(prefix) else root)
        for root in roots
    }
    for pattern, archs in LORA_TARGETS:
        if any(re.search(pattern, p) for p in paths.values()):
            if "flux_kontext" in archs:
                return _narrow_double_blocks(paths, up_width) or archs
            return archs
    return ()


def _narrow_double_blocks(paths: Mapping[str, str], up_width: Mapping[str, int]) -> tuple[str, ...]:
    """FLUX.1, FLUX.2 and HunyuanVideo share block names; widths and spellings separate them."""
    for root, path in paths.items():
        if re.search(r"img_mlp_fc1|img_mod_linear", path):
            return ("hunyuan_video", "hunyuan_video_1_5")
        if re.search(r"^single_blocks_\d+_linear1$", path) and root in up_width:
            return _FLUX_WIDTHS.get(up_width[root], ())
    return ()
