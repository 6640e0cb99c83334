"""The AI-Toolkit estimator's citations, read back from the trainer's source (issue 29).

Each semantic the estimator follows is cited ``file:line`` in its docstrings; this test
opens the cited lines of the checkout at ``KURA_AITK_SRC`` (27a03a9) and finds the code
there, so a moved line or a changed behaviour fails here instead of silently mis-sizing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from trainer_required import missing

CITED = [
    # (file, first line, last line, code that must be there, what the estimator relies on)
    (
        "toolkit/util/quantize.py",
        448,
        465,
        "block.to(base_model.device_torch",
        "quantizing without an adapter moves one block at a time to the GPU",
    ),
    ("toolkit/util/quantize.py", 448, 465, 'block.to("cpu")', "and back to the CPU"),
    (
        "toolkit/util/quantize.py",
        392,
        394,
        "network.force_to(base_model.device_torch",
        "the accuracy-recovery adapter sits on the GPU at the model dtype",
    ),
    (
        "toolkit/util/quantize.py",
        421,
        427,
        "get_qtype('uint8')",
        "layers the adapter does not cover are quantized to uint8",
    ),
    (
        "extensions_built_in/diffusion_models/qwen_image/qwen_image.py",
        141,
        143,
        'transformer.to("cpu")',
        "low_vram parks the DiT on the CPU while loading",
    ),
    (
        "extensions_built_in/diffusion_models/qwen_image/qwen_image.py",
        170,
        175,
        "text_encoder.to(self.device_torch, dtype=dtype)",
        "the text encoder reaches the GPU in full precision before it is quantized",
    ),
    (
        "extensions_built_in/diffusion_models/qwen_image/qwen_image.py",
        219,
        220,
        "pipe.transformer.to(self.device_torch)",
        "without low_vram the DiT moves to the GPU",
    ),
    (
        "extensions_built_in/diffusion_models/qwen_image/qwen_image.py",
        291,
        293,
        "enable_tiling",
        "low_vram decodes samples tiled",
    ),
    (
        "extensions_built_in/sd_trainer/SDTrainer.py",
        296,
        298,
        "self.sd.unet.to('cpu')",
        "the DiT leaves the GPU while the captions are cached",
    ),
    (
        "extensions_built_in/sd_trainer/SDTrainer.py",
        312,
        319,
        "self.sd.vae.to('cpu')",
        "the VAE leaves the GPU once the latents are cached",
    ),
    (
        "extensions_built_in/sd_trainer/SDTrainer.py",
        351,
        351,
        "is_caching_text_embeddings",
        "caching the captions unloads the text encoder",
    ),
    (
        "jobs/process/BaseSDTrainProcess.py",
        1983,
        1983,
        "dtype=torch.float32",
        "the LoRA trains in fp32",
    ),
    (
        "jobs/process/BaseSDTrainProcess.py",
        2472,
        2477,
        "skip_first_sample",
        "the baseline sample runs unless skip_first_sample",
    ),
    (
        "toolkit/memory_management/manager.py",
        109,
        111,
        "random.random() > offload_percent",
        "layer offloading keeps a random share of the Linear layers on the host",
    ),
    (
        "toolkit/memory_management/manager_modules.py",
        27,
        27,
        "AI_TOOLKIT_OFFLOAD_DEPTH",
        "the offload manager prefetches four layers ahead",
    ),
    (
        "extensions_built_in/diffusion_models/wan22/wan22_14b_model.py",
        131,
        146,
        '.to("cpu")',
        "low_vram keeps Wan 2.2's idle expert on the CPU",
    ),
    (
        "extensions_built_in/diffusion_models/flux_kontext/flux_kontext.py",
        311,
        314,
        "torch.cat",
        "Kontext puts the control latents into the sequence",
    ),
    (
        "extensions_built_in/diffusion_models/qwen_image/qwen_image_edit.py",
        260,
        260,
        "torch.cat([latent_model_input, control], dim=1)",
        "so does Qwen-Image-Edit",
    ),
    ("toolkit/config_modules.py", 90, 90, "'sample_steps', 20", "20 sample steps by default"),
    ("toolkit/util/quantize.py", 328, 334, "lora_A", "the adapter's rank is its file's"),
    (
        "toolkit/util/quantize.py",
        474,
        475,
        "quantize(model_to_quantize",
        "the DiT's remaining Linear layers are quantized too",
    ),
    (
        "extensions_built_in/diffusion_models/qwen_image/qwen_image.py",
        121,
        123,
        "from_pretrained",
        "the DiT loads on the CPU in bf16",
    ),
    (
        "extensions_built_in/diffusion_models/qwen_image/qwen_image.py",
        155,
        158,
        "text_encoder.model.visual = None",
        "Qwen-Image drops the encoder's visual tower",
    ),
    (
        "toolkit/memory_management/manager_modules.py",
        47,
        48,
        "torch.cuda.Stream",
        "offloaded weights move on their own stream",
    ),
    (
        "toolkit/memory_management/manager_modules.py",
        289,
        300,
        "dequantize()",
        "and are dequantized on the GPU",
    ),
    (
        "extensions_built_in/diffusion_models/chroma/src/model.py",
        38,
        52,
        "approximator_hidden_size=5120",
        "Chroma's DiT: FLUX.1's blocks, an approximator for the modulation",
    ),
    (
        "extensions_built_in/diffusion_models/chroma/src/model.py",
        38,
        52,
        "depth_single_blocks=38",
        "19 double and 38 single blocks",
    ),
    (
        "extensions_built_in/diffusion_models/chroma/chroma_model.py",
        87,
        87,
        "target_lora_modules = ['Chroma']",
        "AI-Toolkit's LoRA wraps every Linear of Chroma",
    ),
    (
        "extensions_built_in/diffusion_models/chroma/chroma_model.py",
        197,
        216,
        "FakeCLIP()",
        "Chroma's only text encoder is T5-XXL",
    ),
    (
        "extensions_built_in/diffusion_models/chroma/chroma_model.py",
        388,
        397,
        "max_length = 512",
        "captions padded to 512 T5 tokens",
    ),
    (
        "extensions_built_in/diffusion_models/chroma/src/model.py",
        244,
        249,
        ".repeat(txt.shape[0], self.num_heads, 1, 1)",
        "Chroma builds a dense B x heads x L x L mask",
    ),
    (
        "toolkit/stable_diffusion_model.py",
        335,
        367,
        "StableDiffusionXLPipeline",
        "SDXL loads through diffusers' pipeline, encoders in the model dtype",
    ),
]


@pytest.fixture(scope="module")
def source() -> Path:
    src = os.environ.get("KURA_AITK_SRC")
    if not src or not Path(src, "toolkit").is_dir():
        missing("set KURA_AITK_SRC to the AI-Toolkit checkout (27a03a9)")
    return Path(src)


@pytest.mark.parametrize(("path", "first", "last", "code", "why"), CITED, ids=lambda v: str(v))
def test_the_cited_line_holds_the_code(
    source: Path, path: str, first: int, last: int, code: str, why: str
) -> None:
    lines = (source / path).read_text(encoding="utf-8").splitlines()[first - 1 : last]
    assert any(code in line for line in lines), f"{path}:{first}-{last} ({why}) lacks {code!r}"
