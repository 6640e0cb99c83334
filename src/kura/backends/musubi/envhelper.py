"""Kura's helper inside Musubi Tuner's environment: JSON in, JSON out.

Run by path with the environment's Python (its working folder the Musubi checkout), never
imported by Kura's own process::

    <env>/bin/python <this file> COMMAND < request.json > answer.json

Only the standard library is imported at module level; each command imports Musubi (torch,
accelerate, transformers …) inside itself and calls Musubi's own code:

``probe``       the packages the environment holds (versions, where ``musubi-tuner`` was
                installed from), whether torch sees CUDA, and each named entry script of
                the checkout imported by path, as the host executor runs it
``build-tiny``  random Qwen-Image stand-ins built with Musubi's own classes: a DiT of the
                real width with ``num_layers`` blocks and the real-size VAE, saved as
                safetensors in the layout of the released files (the ComfyUI split files),
                plus the LoRA module names Musubi's ``networks.lora_qwen_image`` makes on
                that DiT

The answer is one JSON object on the last line of stdout: ``{"ok": true, "result": …}`` or
``{"ok": false, "error": "…"}`` (exit 0 either way; a crash exits non-zero).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import sys
import traceback
from pathlib import Path
from typing import Any

# Running a file by path puts its folder first on sys.path: this package's module names
# (tensorboard.py, config.py …) must never shadow the environment's own.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

PACKAGES = (
    "musubi-tuner",
    "torch",
    "torchvision",
    "accelerate",
    "diffusers",
    "transformers",
    "safetensors",
    "tensorboard",
    "triton",
)


def _version(name: str) -> str | None:
    import importlib.metadata as metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _installed_from() -> str | None:
    """The folder pip installed ``musubi-tuner`` from (its ``direct_url.json``)."""
    import importlib.metadata as metadata

    try:
        raw = metadata.distribution("musubi-tuner").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not raw:
        return None
    url = str(json.loads(raw).get("url", ""))
    return url.removeprefix("file://") or None


def _import_script(path: Path) -> str:
    """Import one entry script of the checkout by path (not as ``__main__``, so only its
    module-level code runs); "ok" or the error's last line."""
    name = "_kura_probe_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            spec.loader.exec_module(module)
    except BaseException as exc:  # the failure is the answer
        return f"{type(exc).__name__}: {exc}"[:300]
    return "ok"


def probe(request: dict[str, Any]) -> dict[str, Any]:
    import torch

    checkout = Path(str(request["checkout"]))
    scripts = {
        str(script): _import_script(checkout / "src" / "musubi_tuner" / f"{script}.py")
        for script in request.get("scripts", [])
    }
    return {
        "python": sys.executable,
        "packages": {name: _version(name) for name in PACKAGES},
        "installed_from": _installed_from(),
        "cuda": bool(torch.cuda.is_available()),
        "scripts": scripts,
    }


# Official (diffusers) VAE module names -> the original Wan layout the released
# qwen_image_vae.safetensors uses; Musubi's load_vae converts that layout back
# (qwen_image_utils.convert_comfyui_state_dict), which build-tiny checks on every key.
_VAE_FIXED = {
    "quant_conv": "conv1",
    "post_quant_conv": "conv2",
    "encoder.conv_in": "encoder.conv1",
    "decoder.conv_in": "decoder.conv1",
    "encoder.norm_out": "encoder.head.0",
    "encoder.conv_out": "encoder.head.2",
    "decoder.norm_out": "decoder.head.0",
    "decoder.conv_out": "decoder.head.2",
}
_RESNET = {
    "norm1": "residual.0",
    "conv1": "residual.2",
    "norm2": "residual.3",
    "conv2": "residual.6",
    "conv_shortcut": "shortcut",
}
_UP_BLOCK = 4
"""Slots per decoder up block in the Wan layout: three resnets, then the upsampler."""


def wan_vae_module(name: str) -> str:
    """The Wan-layout name of one VAE module."""
    if name in _VAE_FIXED:
        return _VAE_FIXED[name]
    mid = re.fullmatch(r"(encoder|decoder)\.mid_block\.(resnets|attentions)\.(\d)\.(.+)", name)
    if mid:
        side, kind, index, part = mid.groups()
        slot = {("resnets", "0"): 0, ("attentions", "0"): 1, ("resnets", "1"): 2}[(kind, index)]
        return f"{side}.middle.{slot}.{part if kind == 'attentions' else _RESNET[part]}"
    down = re.fullmatch(r"encoder\.down_blocks\.(\d+)\.(.+)", name)
    if down:
        index, part = down.groups()
        return f"encoder.downsamples.{index}.{_RESNET.get(part, part)}"
    up = re.fullmatch(r"decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\.(.+)", name)
    if up:
        block, resnet, part = up.groups()
        return f"decoder.upsamples.{int(block) * _UP_BLOCK + int(resnet)}.{_RESNET[part]}"
    sampler = re.fullmatch(r"decoder\.up_blocks\.(\d+)\.upsamplers\.0\.(.+)", name)
    if sampler:
        block, part = sampler.groups()
        return f"decoder.upsamples.{int(block) * _UP_BLOCK + 3}.{part}"
    raise ValueError(f"no Wan-layout name for the VAE module {name}")


def _wan_layout(state: dict[str, Any]) -> dict[str, Any]:
    from musubi_tuner.qwen_image import qwen_image_utils

    out = {}
    for key, value in state.items():
        module, leaf = key.rsplit(".", 1)
        out[f"{wan_vae_module(module)}.{leaf}"] = value
    with contextlib.redirect_stderr(io.StringIO()):
        back = qwen_image_utils.convert_comfyui_state_dict(dict(out))
    if set(back) != set(state):
        differ = sorted(set(back) ^ set(state))[:4]
        raise ValueError(f"the VAE layout does not round-trip: {differ}")
    return out


def _bf16(module: Any) -> dict[str, Any]:
    import torch

    return {k: v.to(torch.bfloat16).contiguous() for k, v in module.state_dict().items()}


def build_tiny(request: dict[str, Any]) -> dict[str, Any]:
    import torch
    from safetensors.torch import save_file

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        from musubi_tuner.networks import lora_qwen_image
        from musubi_tuner.qwen_image.qwen_image_autoencoder_kl import AutoencoderKLQwenImage
        from musubi_tuner.qwen_image.qwen_image_model import QwenImageTransformer2DModel

    folder = Path(str(request["folder"]))
    num_layers, seed = int(request["num_layers"]), int(request["seed"])
    folder.mkdir(parents=True, exist_ok=True)
    torch.set_default_dtype(torch.bfloat16)  # the released files' dtype, at half the memory
    torch.manual_seed(seed)
    # The class's defaults are the released Qwen-Image DiT's configuration
    # (qwen_image_model.create_model passes the same values); only the depth differs.
    dit = QwenImageTransformer2DModel(num_layers=num_layers)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        network = lora_qwen_image.create_arch_network(1.0, 4, 4, None, None, dit)
    modules = sorted(lora.lora_name for lora in network.unet_loras)
    state = _bf16(dit)
    dit_params = sum(v.numel() for v in state.values())
    save_file(state, str(folder / "dit.safetensors"))
    del dit, network, state
    torch.manual_seed(seed + 1)
    vae = AutoencoderKLQwenImage()  # defaults: qwen_image_utils.load_vae's configuration
    state = _bf16(vae)
    vae_params = sum(v.numel() for v in state.values())
    save_file(_wan_layout(state), str(folder / "vae.safetensors"))
    return {
        "dit": str(folder / "dit.safetensors"),
        "vae": str(folder / "vae.safetensors"),
        "dit_params": dit_params,
        "vae_params": vae_params,
        "num_layers": num_layers,
        "lora_modules": modules,
    }


COMMANDS = {"probe": probe, "build-tiny": build_tiny}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in COMMANDS:
        print(f"usage: envhelper.py {{{','.join(COMMANDS)}}} < request.json", file=sys.stderr)
        return 2
    request = json.loads(sys.stdin.read() or "{}")
    try:
        answer: dict[str, Any] = {"ok": True, "result": COMMANDS[argv[0]](request)}
    except Exception as exc:  # reported to Kura as the answer, with where it happened
        traceback.print_exc()
        answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
