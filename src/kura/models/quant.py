"""Precision and quantisation of a weight file, read from tensor names, dtypes and metadata.

Detection order follows model-signatures §7.7: ComfyUI mixed-precision metadata or
``.comfy_quant`` tensors, the legacy ComfyUI ``scaled_fp8`` marker, other tools' scale
tensors, bitsandbytes 4-bit siblings, then plain fp8 by weight share.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from kura.bounded import parse_json
from kura.errors import InvalidInput
from kura.models.header import TensorInfo

__all__ = ["QUANT_SUFFIXES", "Precision", "detect_precision", "is_quant_sidecar"]

QUANT_SUFFIXES = (
    ".scale_weight",
    ".scale_input",
    ".weight_scale",
    ".weight_scale_2",
    ".input_scale",
    ".pre_quant_scale",
    ".comfy_quant",
    ".absmax",
    ".quant_map",
    ".nested_absmax",
    ".nested_quant_map",
    ".weight_code",
)
_FP8 = {"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ"}
_COMFY_FORMATS = {
    "nvfp4": "nvfp4",
    "mxfp8": "mxfp8",
    "int8_tensorwise": "int8",
    "convrot_w4a4": "int8",
    "asym_w4a8_int8": "int8",
    "nf4": "bnb-4bit",
}


@dataclass(frozen=True)
class Precision:
    """``dtype``: the dominant weight dtype by element count; ``quantization``: one of
    ``none``, ``fp8``, ``fp8-scaled-comfy``, ``fp8-mixed-comfy``, ``nvfp4``, ``mxfp8``,
    ``int8``, ``bnb-4bit``, ``scaled-other``; ``packed_layers``: weights stored as ``U8``
    nibbles whose last dimension is half the logical one; ``sidecars``: scale and marker
    tensors (not weights)."""

    dtype: str
    quantization: str
    formats: tuple[str, ...]
    packed_layers: frozenset[str]
    sidecars: frozenset[str] = frozenset()


def is_quant_sidecar(name: str) -> bool:
    """Whether ``name`` is a scale/marker tensor that belongs to a quantised layer."""
    return name.endswith(QUANT_SUFFIXES) or name.endswith("scaled_fp8") or ".quant_state." in name


_BNB_SUFFIXES = (".absmax", ".quant_map")
_SCALE_SUFFIXES = (".weight_scale", ".weight_scale_2", ".input_scale", ".scale_weight")


def detect_precision(tensors: Mapping[str, TensorInfo], metadata: Mapping[str, str]) -> Precision:
    """One pass over the names collects the markers; §7.7's order then decides the label."""
    sidecars = frozenset(n for n in tensors if is_quant_sidecar(n))
    by_dtype: Counter[str] = Counter()
    matmul: Counter[str] = Counter()
    for name, info in tensors.items():
        if name in sidecars:
            continue
        by_dtype[info.dtype] += info.numel
        if len(info.shape) >= 2 and name.endswith(".weight"):
            matmul["fp8" if info.dtype in _FP8 else "other"] += info.numel
    dtype = by_dtype.most_common(1)[0][0] if by_dtype else "none"
    packed = frozenset(
        n[: -len(".weight_scale_2")]
        for n in sidecars
        if n.endswith(".weight_scale_2")
        and (weight := tensors.get(n[: -len("_scale_2")])) is not None
        and weight.dtype == "U8"
    )
    formats = _comfy_formats(sidecars, metadata)
    if formats is not None:
        labels = sorted(
            {
                _COMFY_FORMATS.get(f, "fp8-mixed-comfy" if f.startswith("float8") else f)
                for f in formats
            }
        )
        quant = labels[0] if len(labels) == 1 else "mixed:" + "+".join(labels)
        return Precision(dtype, quant, tuple(sorted(formats)), packed, sidecars)
    if any(n.endswith("scaled_fp8") for n in sidecars):
        quant = "fp8-scaled-comfy"
    elif any(".quant_state.bitsandbytes__" in n or n.endswith(_BNB_SUFFIXES) for n in sidecars):
        quant = "bnb-4bit"
    elif any(n.endswith(_SCALE_SUFFIXES) for n in sidecars):
        quant = "scaled-other"
    elif matmul["fp8"] > matmul["other"]:
        quant = "fp8"
    else:
        quant = "none"
    return Precision(dtype, quant, (), packed, sidecars)


def _comfy_formats(sidecars: frozenset[str], metadata: Mapping[str, str]) -> set[str] | None:
    """The per-layer formats of a ComfyUI mixed-precision file, or None if it is not one."""
    raw = metadata.get("_quantization_metadata")
    has_markers = any(n.endswith(".comfy_quant") for n in sidecars)
    if raw is None and not has_markers:
        return None
    formats: set[str] = set()
    if raw is not None:
        try:
            document = parse_json(raw, "__metadata__['_quantization_metadata']")
        except InvalidInput:  # damaged metadata: the file still is ComfyUI mixed precision
            document = {}
        layers = document.get("layers", {}) if isinstance(document, dict) else {}
        if isinstance(layers, dict):
            for spec in layers.values():
                if isinstance(spec, dict) and isinstance(spec.get("format"), str):
                    formats.add(spec["format"])
    if not formats:
        formats.add("comfy-mixed")
    return formats
