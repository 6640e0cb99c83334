"""Count the modules AI-Toolkit's LoCon network builds on tiny models of each kind.

``python locon_harness.py`` with ``PYTHONPATH`` at an AI-Toolkit checkout, in its
environment (torch, diffusers, lycoris). Builds ``toolkit/lycoris_special.py``'s
``LycorisSpecialNetwork`` as ``BaseSDTrainProcess`` does for ``network.type: locon``
(``jobs/process/BaseSDTrainProcess.py:1933-1935``) over a tiny diffusers UNet and tiny DiTs
(Flux, Qwen-Image, Wan), with random weights, and prints ``{model: module count}`` as JSON.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any


def _models() -> dict[str, Any]:
    from diffusers import (
        FluxTransformer2DModel,
        QwenImageTransformer2DModel,
        UNet2DConditionModel,
        WanTransformer3DModel,
    )

    return {
        "unet": UNet2DConditionModel(
            block_out_channels=(8, 16),
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
            cross_attention_dim=16,
            layers_per_block=1,
            norm_num_groups=8,
            attention_head_dim=4,
            sample_size=16,
        ),
        "flux": FluxTransformer2DModel(
            patch_size=1,
            in_channels=4,
            num_layers=1,
            num_single_layers=1,
            attention_head_dim=8,
            num_attention_heads=2,
            joint_attention_dim=16,
            pooled_projection_dim=16,
            axes_dims_rope=(2, 2, 4),
        ),
        "qwen_image": QwenImageTransformer2DModel(
            patch_size=2,
            in_channels=16,
            out_channels=4,
            num_layers=1,
            attention_head_dim=8,
            num_attention_heads=2,
            joint_attention_dim=16,
            axes_dims_rope=(2, 2, 4),
        ),
        "wan": WanTransformer3DModel(
            patch_size=(1, 2, 2),
            num_attention_heads=2,
            attention_head_dim=8,
            in_channels=4,
            out_channels=4,
            text_dim=16,
            freq_dim=16,
            ffn_dim=32,
            num_layers=1,
        ),
    }


def main() -> dict[str, int]:
    from toolkit.config_modules import NetworkConfig
    from toolkit.lycoris_special import LycorisSpecialNetwork

    counts: dict[str, int] = {}
    for name, model in _models().items():
        network = LycorisSpecialNetwork(
            text_encoder=[],
            unet=model,
            lora_dim=4,
            alpha=4,
            train_text_encoder=False,
            train_unet=True,
            network_config=NetworkConfig(type="locon", linear=4, linear_alpha=4),
        )
        counts[name] = len(network.unet_loras)
    return counts


if __name__ == "__main__":
    answer = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # AI-Toolkit and LyCORIS print progress
        counts = main()
    answer.write(json.dumps(counts) + "\n")
