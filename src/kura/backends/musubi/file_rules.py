"""Musubi's documented rules on pre-quantised, fp8 and fp16 base-model files.

``file_rules`` is the backend's ``file_rules`` verb: what Musubi refuses to load (a
pre-quantised DiT, a plain fp8 Qwen-Image DiT) and what it takes only with a setting (an fp8
Wan DiT with ``--fp8_base``, an fp16 Wan DiT with ``--mixed_precision fp16``).
"""

from __future__ import annotations

from kura.backends.base import FileRules
from kura.models.identify import ModelReport
from kura.models.signatures import ARCHITECTURES

__all__ = ["file_rules"]

_QUANTISED = {
    "fp8-scaled-comfy",
    "fp8-mixed-comfy",
    "comfy-mixed",
    "nvfp4",
    "mxfp8",
    "int8",
    "bnb-4bit",
    "scaled-other",
}
_PRESCALED_OK = {"ideogram4"}
"""Architectures whose Musubi loader takes ComfyUI pre-quantised files (musubi §1.12)."""
_PRESCALED_MAYBE = {"krea2"}
"""Architectures with a special fp8 loader whose accepted file formats are not documented."""
_QUANT_LABELS = {
    "fp8-scaled-comfy": "ComfyUI scaled-fp8 checkpoint",
    "fp8-mixed-comfy": "ComfyUI mixed-precision fp8 checkpoint",
    "comfy-mixed": "ComfyUI mixed-precision checkpoint",
    "nvfp4": "ComfyUI NVFP4 checkpoint",
    "mxfp8": "ComfyUI MXFP8 checkpoint",
    "int8": "int8-quantised checkpoint",
    "bnb-4bit": "bitsandbytes 4-bit checkpoint",
    "scaled-other": "pre-scaled quantised checkpoint (another tool's format)",
}


def file_rules(report: ModelReport, architecture: str | None) -> FileRules:
    """Musubi's documented constraints on pre-quantised and reduced-precision files."""
    refusals: list[str] = []
    warnings: list[str] = []
    quant = report.quantization
    if quant in _QUANTISED or quant.startswith("mixed:"):
        label = _QUANT_LABELS.get(quant, f"{quant} checkpoint")
        if architecture in _PRESCALED_OK:
            pass
        elif architecture in _PRESCALED_MAYBE:
            warnings.append(
                f"{label}: Musubi's {ARCHITECTURES[architecture]} fp8 loader is special; Kura "
                "cannot confirm it takes this file — prefer the bf16 file"
            )
        elif report.role == "dit":
            refusals.append(
                f"{label}: Musubi does not load pre-quantised DiTs (it quantises bf16/fp16 "
                "weights itself with --fp8_base --fp8_scaled); supply the bf16 or fp16 file"
            )
        else:
            warnings.append(
                f"{label}: Musubi documents no support for pre-quantised "
                f"{report.role.replace('_', ' ')} files; prefer the bf16/fp16 file"
            )
        return FileRules(tuple(refusals), tuple(warnings))
    if quant == "fp8" and report.role == "dit":
        if architecture == "qwen_image":
            refusals.append(
                "plain fp8 (e4m3fn) DiT: the Musubi Qwen-Image docs say fp8_e4m3fn files cannot "
                "be used; supply the bf16 file"
            )
        elif architecture == "wan":
            warnings.append(
                "plain fp8 (e4m3fn) DiT: Musubi takes it only with --fp8_base and without "
                "--fp8_scaled (it refuses to re-scale fp8 weights)"
            )
        else:
            warnings.append(
                "plain fp8 (e4m3fn) DiT: lossy; usable only as a frozen base with --fp8_base, "
                "prefer bf16 for training"
            )
    if report.dtype == "F16" and report.role == "dit":
        if architecture == "hunyuan_video_1_5":
            warnings.append(
                "fp16 DiT: Musubi refuses to override its dtype to bf16 or fp32; train with "
                "fp16 (or use the bf16 file)"
            )
        elif architecture == "wan":
            warnings.append(
                "fp16 DiT: Musubi requires --mixed_precision fp16 (or no) for fp16 Wan weights"
            )
    return FileRules(tuple(refusals), tuple(warnings))
