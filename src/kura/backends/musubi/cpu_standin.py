"""A STAND-IN for Qwen-Image's text encoder in Musubi's text-encoder cache step, for CPU runs.

This is not Musubi Tuner's shipped behaviour. Musubi's
``qwen_image_cache_text_encoder_outputs.py`` loads Qwen2.5-VL 7B (a fixed configuration,
about 16 GB) and its tokenizer from the Hugging Face hub; neither fits a CPU-only test
machine, and nothing may be downloaded at run time. This wrapper runs that script's own
``main`` (its argument parser, dataset config, batching and cache writer, unchanged) with one
thing replaced: ``qwen_image_utils.load_qwen2_5_vl`` returns a byte-level tokenizer and an
encoder of random embeddings (seeded, so the same caption always caches the same tensor) of
the width the DiT reads, 3584. ``--text_encoder`` is parsed and not opened. The caches it
writes have Musubi's names and layout; what they hold carries no meaning.

Kura's CPU runs (the tests and ``kura demo``) put it in place of the generated step through
the escape hatch (``backend.config.cache_text_encoder_command``, see
:func:`kura.backends.musubi.tiny.tiny_settings`), so the plan shows the step as a person's
command, not Kura's. Run by path with the Musubi environment's Python, from the checkout::

    <env>/bin/python <this file> --dataset_config … --text_encoder … [--model_version …]
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# Run by path, this file's folder comes first on sys.path: Kura's module names there
# (tensorboard.py, config.py …) must not shadow the environment's packages.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

HIDDEN = 3584
"""Qwen2.5-VL 7B's hidden width, what Qwen-Image's DiT reads (``joint_attention_dim``)."""
VOCAB = 257
"""UTF-8 bytes, shifted by one; 0 pads."""
SEED = 0


class ByteTokenizer:
    """Called as Musubi calls the Qwen2 tokenizer in ``get_qwen_prompt_embeds``."""

    def __call__(
        self,
        texts: list[str],
        max_length: int,
        padding: bool,
        truncation: bool,
        return_tensors: str,
    ) -> Any:
        import torch
        from transformers import BatchEncoding

        rows = [[byte + 1 for byte in text.encode("utf-8")][:max_length] for text in texts]
        width = max(len(row) for row in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        return BatchEncoding({"input_ids": ids, "attention_mask": mask}, tensor_type="pt")


def random_encoder(dtype: Any, device: Any) -> Any:
    """A module answering like ``Qwen2_5_VLForConditionalGeneration`` does for Musubi: the
    last hidden state, here a seeded random embedding per byte."""
    import torch

    class RandomEncoder(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            generator = torch.Generator().manual_seed(SEED)
            table = torch.randn(VOCAB, HIDDEN, generator=generator).to(dtype)
            self.table = torch.nn.Parameter(table, requires_grad=False)

        @property
        def device(self) -> Any:
            return self.table.device

        @property
        def dtype(self) -> Any:
            return self.table.dtype

        def forward(self, input_ids: Any, attention_mask: Any, output_hidden_states: bool) -> Any:
            return SimpleNamespace(hidden_states=(self.table[input_ids],))

    return RandomEncoder().to(device)


def load_standin(
    ckpt_path: str,
    dtype: Any,
    device: Any,
    disable_mmap: bool = False,
    state_dict: Any = None,
) -> tuple[ByteTokenizer, Any]:
    """In place of ``qwen_image_utils.load_qwen2_5_vl`` (same signature)."""
    import torch

    print(
        f"CPU STAND-IN (Kura, not Musubi): {ckpt_path} is not loaded; captions are encoded "
        f"as seeded random byte embeddings of width {HIDDEN}",
        file=sys.stderr,
    )
    return ByteTokenizer(), random_encoder(dtype or torch.bfloat16, torch.device(device))


def main() -> None:
    from musubi_tuner import qwen_image_cache_text_encoder_outputs as text_cache
    from musubi_tuner.qwen_image import qwen_image_utils

    args = sys.argv[1:]
    if "--fp8_vl" in args:
        raise SystemExit("the CPU stand-in has no fp8 mode: drop backend.config.fp8_vl")
    version = args[args.index("--model_version") + 1] if "--model_version" in args[:-1] else None
    if version not in (None, "original"):
        raise SystemExit(
            f"the CPU stand-in encodes captions only (Qwen-Image original), not {version}: "
            "the edit variants also need Qwen2.5-VL's image processor"
        )
    qwen_image_utils.load_qwen2_5_vl = load_standin
    text_cache.main()


if __name__ == "__main__":
    main()
