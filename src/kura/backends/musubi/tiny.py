"""A Qwen-Image small enough to train for real with Musubi Tuner on a CPU, and its settings.

Musubi builds every model at a fixed size except Qwen-Image's DiT, whose depth
``--num_layers`` sets (``qwen_image_train_network.py``). So the tiny model is the real
width with one block (about 380 M parameters, 0.76 GB) and the real-size VAE (127 M), both
random, built by Musubi's own classes in its environment (``envhelper.py build-tiny``) and
saved in the released files' layout, so Kura's header checks read real keys and shapes. The
text encoder (Qwen2.5-VL 7B) stays out: its file here is a header-only stand-in (real keys
and shapes, no data) that nothing opens, because the text-encoder cache step is replaced by
:mod:`kura.backends.musubi.cpu_standin` — the one step of such a run that is not Musubi's
shipped behaviour.

:func:`tiny_settings` are the ``run new --set`` values such a run needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kura.backends.musubi.helper import call_helper
from kura.backends.trainer_env import EnvLocation
from kura.models.layouts import component_fixture, write_sparse_safetensors

__all__ = ["BUNDLE", "TinyQwenImage", "build_tiny", "tiny_settings"]

BUNDLE = "qwen-image"
"""The bundle the tiny model stands in for (its files are checked as that bundle's)."""
TEXT_ENCODER_COMPONENT = "qwen25-vl-7b"
_BUILD_SECONDS = 600
CPU_STANDIN = Path(__file__).with_name("cpu_standin.py")


@dataclass(frozen=True)
class TinyQwenImage:
    """The stand-ins in ``folder``, and what Musubi's own code says of them."""

    folder: Path
    dit: Path
    vae: Path
    text_encoder: Path
    """Header-only: Qwen2.5-VL 7B's keys and shapes; never opened in a CPU run."""
    num_layers: int
    dit_params: int
    vae_params: int
    lora_modules: tuple[str, ...]
    """The modules ``networks.lora_qwen_image`` wraps on this DiT, by Musubi's LoRA names."""


def build_tiny(
    env: EnvLocation, folder: Path, *, num_layers: int = 1, seed: int = 0
) -> TinyQwenImage:
    """Build the stand-ins into ``folder`` (about 20 s and 2 GB of memory on two cores)."""
    result = call_helper(
        env,
        "build-tiny",
        {"folder": str(folder), "num_layers": num_layers, "seed": seed},
        timeout=_BUILD_SECONDS,
    )
    text_encoder = folder / "text_encoder.safetensors"
    tensors, metadata = component_fixture(TEXT_ENCODER_COMPONENT)
    write_sparse_safetensors(text_encoder, tensors, metadata)
    tiny = TinyQwenImage(
        folder=folder,
        dit=Path(result["dit"]),
        vae=Path(result["vae"]),
        text_encoder=text_encoder,
        num_layers=int(result["num_layers"]),
        dit_params=int(result["dit_params"]),
        vae_params=int(result["vae_params"]),
        lora_modules=tuple(str(name) for name in result["lora_modules"]),
    )
    return tiny


def standin_command(env: EnvLocation) -> list[str]:
    """The text-encoder cache argv of a CPU run: the stand-in, run by the environment's
    Python, with the placeholders compile fills in."""
    return [
        str(env.python),
        str(CPU_STANDIN.resolve()),
        "--dataset_config",
        "{dataset_config}",
        "--text_encoder",
        "{model.text_encoder}",
        "--model_version",
        "original",
    ]


def tiny_settings(
    env: EnvLocation, tiny: TinyQwenImage, dataset: str, *, resolution: int = 64
) -> tuple[str, ...]:
    """``run new --set`` values for a CPU run of the tiny model on the host, trained on
    ``dataset`` alone: its files, its depth, the text-encoder stand-in, ``resolution`` px
    (not the bundle's native 1328), no sample prompts (sampling would load the real text
    encoder), a plain optimizer (bitsandbytes' 8-bit AdamW wants a GPU), no loader workers,
    two steps of a rank-4 LoRA."""
    datasets = [{"name": dataset, "resolution": [resolution, resolution], "repeats": 1}]
    return (
        "execution.executor=host",
        f"model.paths.dit={tiny.dit}",
        f"model.paths.vae={tiny.vae}",
        f"model.paths.text_encoder={tiny.text_encoder}",
        f"backend.config.num_layers={tiny.num_layers}",
        f"backend.config.cache_text_encoder_command={json.dumps(standin_command(env))}",
        "backend.config.max_data_loader_n_workers=0",
        "backend.config.persistent_data_loader_workers=false",
        "training.optimizer=adamw",
        "training.learning_rate=0.001",
        f"datasets={json.dumps(datasets)}",
        "training.sample_prompts=[]",
        "training.epochs=null",
        "training.max_steps=2",
        "training.network.rank=4",
        "training.network.alpha=4",
        "training.warmup_steps=0",
        "training.seed=0",
    )
