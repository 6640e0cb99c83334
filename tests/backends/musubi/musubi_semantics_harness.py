"""Run Musubi Tuner's own dataset code on compiled dataset TOMLs and report what it makes.

Run as a script (``python musubi_semantics_harness.py <musubi src dir> <manifest.json>``)
with real ``torch``, ``numpy``, ``Pillow``, ``av``, ``cv2``, ``safetensors``, ``toml`` and
``voluptuous`` importable (``KURA_MUSUBI_DEPS`` may name a folder holding the last three
and ``cv2``). The manifest maps a case name to ``{"toml": <path>, "argv": <the golden
cache_latents step argv>}``; the TOML's folders must exist with the case's media.

Per case it

1. runs the cache step's own script (``runpy``, the golden argv with ``--dataset_config``
   pointing at the local TOML) up to ``BlueprintGenerator.generate``: the architecture
   Musubi passes there, and its parsed arguments, are captured, so the architecture is the
   script's own choice, not the harness's;
2. builds the dataset group with ``config_utils`` exactly as that script does
   (``ConfigSanitizer``, ``BlueprintGenerator``, ``generate_dataset_group_by_blueprint``);
3. runs every dataset's ``retrieve_latent_cache_batches`` (which loads the images and
   videos with Musubi's loaders: buckets, ``source_fps`` frame dropping, frame extraction,
   control pairing and resizing) and records every item;
4. writes what latent caching would write: for FramePack, Musubi's own
   ``fpack_cache_latents.encode_and_save_batch`` runs with its VAE and image encoder
   replaced by zero tensors of the right shape (so the section split and the cache names
   are Musubi's); for the others, one safetensors file per item at the item's own
   ``latent_cache_path`` whose keys carry the latent and control shapes the way the
   architecture's ``save_latent_cache_*`` names them (only names and shapes matter to
   training-time bucketing). Every VAE call's input size (width, height, frames) is
   recorded as ``encoded``: FramePack's is the whole section-aligned clip. Text-encoder
   caches are written for every item
   ``retrieve_text_encoder_output_cache_batches`` yields;
5. builds the training dataset group (``training=True``: ``prepare_for_training`` globs
   the caches, buckets them, repeats them ``num_repeats`` times) and records
   ``num_train_items``, the number of batches per epoch (``len(batch_manager)``) and the
   items per bucket.

It prints one JSON object: case → result (or ``{"error": ...}``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.machinery
import importlib.util
import io
import json
import os
import pathlib
import runpy
import sys
import traceback
import types
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

# Packages a cache script imports but the dataset code never needs; served as inert
# placeholders only when they are not installed (torch, numpy, PIL, av, cv2 stay real).
_OPTIONAL = (
    "transformers",
    "torchvision",
    "diffusers",
    "accelerate",
    "bitsandbytes",
    "sentencepiece",
    "ftfy",
    "tokenizers",
    "timm",
    "imageio",
    "matplotlib",
    "ascii_magic",
    "lycoris",
    "xformers",
    "flash_attn",
    "sageattention",
    "triton",
    "prompt_toolkit",
    "gradio",
    "qwen_vl_utils",
    "torchao",
    "kornia",
    "omegaconf",
    "sensecraft",
    "regex",
    "huggingface_hub",
)


def _optional_finder(missing: set[str]) -> Any:
    """The parser harness's inert placeholders, for the missing optional packages only."""
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from musubi_parse_harness import _PlaceholderFinder

    class _Missing(_PlaceholderFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname.split(".")[0] not in missing:
                return None
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    return _Missing()


class _Captured(Exception):
    def __init__(self, architecture: str, args: argparse.Namespace) -> None:
        super().__init__(architecture)
        self.architecture = architecture
        self.namespace = args


def _script(argv: list[str]) -> tuple[str, list[str]]:
    for index, element in enumerate(argv):
        if element.startswith("src/musubi_tuner/") and element.endswith(".py"):
            return element, argv[index + 1 :]
    raise ValueError(f"no Musubi script in {argv}")


def _capture_architecture(argv: list[str], toml_path: str) -> _Captured:
    """Run the cache script until it hands its dataset config to the blueprint generator."""
    from musubi_tuner.dataset import config_utils

    script, args = _script(argv)
    args = list(args)
    args[args.index("--dataset_config") + 1] = toml_path
    original = config_utils.BlueprintGenerator.generate

    def capture(self: Any, user_config: dict, namespace: Any, **runtime: Any) -> Any:
        raise _Captured(runtime["architecture"], namespace)

    config_utils.BlueprintGenerator.generate = capture  # type: ignore[method-assign]
    sys.argv = [script, *args]
    sink = io.StringIO()
    try:
        with redirect_stdout(sink), redirect_stderr(sink):
            runpy.run_module("musubi_tuner." + pathlib.Path(script).stem, run_name="__main__")
    except _Captured as captured:
        return captured
    finally:
        config_utils.BlueprintGenerator.generate = original  # type: ignore[method-assign]
    raise RuntimeError(f"{script} never built its dataset blueprint: {sink.getvalue()[-400:]}")


def _datasets(toml_path: str, captured: _Captured, training: bool) -> list[Any]:
    from musubi_tuner.dataset import config_utils

    generator = config_utils.BlueprintGenerator(config_utils.ConfigSanitizer())
    user = config_utils.load_user_config(toml_path)
    blueprint = generator.generate(user, captured.namespace, architecture=captured.architecture)
    group = config_utils.generate_dataset_group_by_blueprint(
        blueprint.dataset_group, training=training
    )
    return list(group.datasets)


def _shape(array: Any) -> list[int]:
    return [int(v) for v in array.shape]


def _item_record(item: Any) -> dict[str, Any]:
    content = item.content
    first = content[0] if isinstance(content, list) else content
    height, width = first.shape[1:3] if first.ndim == 4 else first.shape[0:2]
    controls = item.control_content
    control_shapes: list[list[int]] = []
    if isinstance(controls, list):
        control_shapes = [_shape(c)[0:2] for c in controls]
    elif controls is not None:
        control_shapes = [_shape(controls)[1:3]]
    return {
        "key": os.path.basename(item.item_key),
        "original_size": list(item.original_size),
        "bucket": [int(width), int(height)],
        "frames": None if item.frame_count is None else int(item.frame_count),
        "controls": len(control_shapes),
        "control_sizes": control_shapes,
    }


def _fake_latent_cache(item: Any) -> None:
    """One cache file at the item's own path, keys named like ``save_latent_cache_*``."""
    import torch
    from safetensors.torch import save_file

    record = _item_record(item)
    width, height = record["bucket"]
    frames = record["frames"] or 1
    latent_frames = (frames - 1) // 4 + 1
    sd = {f"latents_{latent_frames}x{height // 8}x{width // 8}_bf16": torch.zeros(1)}
    for index, (c_height, c_width) in enumerate(record["control_sizes"]):
        sd[f"latents_control_{index}_1x{c_height // 8}x{c_width // 8}_bf16"] = torch.zeros(1)
    os.makedirs(os.path.dirname(item.latent_cache_path), exist_ok=True)
    metadata = {"width": str(item.original_size[0]), "height": str(item.original_size[1])}
    save_file(sd, item.latent_cache_path, metadata=metadata)


def _framepack_encoder(f1: bool, encoded: list[list[int]]) -> Any:
    """Musubi's own FramePack section writer, with zero tensors for the VAE and image
    encoder outputs; each VAE call's input (width, height, frames) is appended to
    ``encoded``."""
    import torch

    fpack = importlib.import_module("musubi_tuner.fpack_cache_latents")

    class _Vae:
        device = torch.device("cpu")
        dtype = torch.float32

    def vae_encode(contents: Any, vae: Any) -> Any:
        batch, _, frames, height, width = contents.shape
        encoded.extend([[int(width), int(height), int(frames)]] * int(batch))
        latent_frames = (frames - 1) // 4 + 1
        return torch.zeros(batch, 16, latent_frames, height // 8, width // 8)

    def clip_encode(image: Any, extractor: Any, encoder: Any) -> Any:
        return types.SimpleNamespace(last_hidden_state=torch.zeros(1, 729, 1152))

    fpack.hunyuan.vae_encode = vae_encode
    fpack.hf_clip_vision_encode = clip_encode

    def encode(batch: list[Any]) -> None:
        fpack.encode_and_save_batch(_Vae(), None, None, batch, f1, False, False, False)

    return encode


def _fake_text_cache(item: Any) -> None:
    import torch
    from safetensors.torch import save_file

    os.makedirs(os.path.dirname(item.text_encoder_output_cache_path), exist_ok=True)
    save_file({"varlen_x_bf16": torch.zeros(1)}, item.text_encoder_output_cache_path)


def run_case(argv: list[str], toml_path: str) -> dict[str, Any]:
    captured = _capture_architecture(argv, toml_path)
    from musubi_tuner.dataset.architectures import ARCHITECTURE_FRAMEPACK

    framepack = captured.architecture == ARCHITECTURE_FRAMEPACK
    encoded: list[list[int]] = []
    encode = (
        _framepack_encoder(bool(getattr(captured.namespace, "f1", False)), encoded)
        if framepack
        else None
    )
    datasets_out: list[dict[str, Any]] = []
    for dataset in _datasets(toml_path, captured, training=False):
        items: list[dict[str, Any]] = []
        errors: list[str] = []
        encoded.clear()
        for _, batch in dataset.retrieve_latent_cache_batches(1):
            items += [_item_record(item) for item in batch]
            if encode is not None:
                for item in batch:
                    try:
                        encode([item])
                    except ValueError as exc:  # Musubi's refusal is the result
                        errors.append(str(exc))
            else:
                for item in batch:
                    _fake_latent_cache(item)
                    record = _item_record(item)
                    encoded.append([*record["bucket"], record["frames"] or 1])
        for batch in dataset.retrieve_text_encoder_output_cache_batches(1):
            for item in batch:
                _fake_text_cache(item)
        datasets_out.append(
            {
                "kind": "video" if hasattr(dataset, "target_frames") else "image",
                "num_repeats": int(dataset.num_repeats),
                "items": sorted(items, key=lambda r: (r["key"], r["frames"] or 0)),
                "cache_errors": errors,
                "encoded": sorted(encoded),
            }
        )
    trained = _datasets(toml_path, captured, training=True)
    for record, dataset in zip(datasets_out, trained, strict=True):
        manager = dataset.batch_manager
        record["train_items"] = int(dataset.num_train_items)
        record["batches"] = len(manager)
        record["buckets"] = sorted(
            [[str(v) for v in key], len(items)] for key, items in manager.buckets.items()
        )
    return {"architecture": captured.architecture, "datasets": datasets_out}


def main() -> None:
    source, manifest_path = sys.argv[1], sys.argv[2]
    extra = os.environ.get("KURA_MUSUBI_DEPS")
    if extra:
        sys.path.insert(0, extra)
    sys.path.insert(0, source)
    missing = {name for name in _OPTIONAL if importlib.util.find_spec(name) is None}
    sys.meta_path.insert(0, _optional_finder(missing))
    import torch

    # wan/modules/t5.py asks for the CUDA device in a default argument at import time.
    torch.cuda.current_device = lambda: 0
    import logging

    logging.disable(logging.WARNING)
    manifest = json.loads(pathlib.Path(manifest_path).read_text(encoding="utf-8"))
    results: dict[str, Any] = {}
    for case, entry in sorted(manifest.items()):
        try:
            with redirect_stdout(io.StringIO()):
                results[case] = run_case(entry["argv"], entry["toml"])
        except Exception as exc:  # the failure is the result being reported
            trace = traceback.format_exc(limit=-4)
            results[case] = {"error": f"{type(exc).__name__}: {exc}", "trace": trace}
    print(json.dumps(results, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
