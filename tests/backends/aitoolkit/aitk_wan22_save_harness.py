"""AI-Toolkit's own Wan 2.2 A14B LoRA save, run on a stand-in model: the files it writes.

Run as ``python aitk_wan22_save_harness.py AITK_SRC OUTPUT NAME STEP…`` with AI-Toolkit's
Python. For each step (``0`` = the final save) it builds the network's state dict in the
names the LoRA network gives both transformers before saving (``transformer.`` +
``transformer_1.``/``transformer_2.`` + the diffusers module path, PEFT ``lora_A``/
``lora_B``, ``toolkit/lora_special.py:466-494``), renames it with the model class's own
``convert_lora_weights_before_save`` (``toolkit/models/wan21/wan21.py:726``), and saves it
with ``Wan2214bModel.save_lora`` under the file name ``BaseSDTrainProcess.save`` gives
(``<name>[_<step:09d>].safetensors``, ``jobs/process/BaseSDTrainProcess.py:516-523``).
Prints ``KURA-REPORT`` and the JSON list of files written.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

SRC = Path(sys.argv[1]).resolve()
OUTPUT = Path(sys.argv[2])
NAME = sys.argv[3]
STEPS = [int(s) for s in sys.argv[4:]]
sys.path.insert(0, str(SRC))
os.chdir(SRC)

import torch  # noqa: E402
from extensions_built_in.diffusion_models.wan22.wan22_14b_model import (  # noqa: E402
    Wan2214bModel,
)

DIM, FFN, RANK = 5120, 13824, 4
MODULES = [
    *[(f"attn1.{m}", DIM, DIM) for m in ("to_q", "to_k", "to_v", "to_out.0")],
    *[(f"attn2.{m}", DIM, DIM) for m in ("to_q", "to_k", "to_v", "to_out.0")],
    ("ffn.net.0.proj", FFN, DIM),
    ("ffn.net.2", DIM, FFN),
]


def _state_dict(seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    state: dict[str, torch.Tensor] = {}
    for expert in ("transformer_1", "transformer_2"):
        for block in range(2):
            for module, out_features, in_features in MODULES:
                root = f"transformer.{expert}.blocks.{block}.{module}"
                state[f"{root}.lora_A.weight"] = torch.randn(
                    (RANK, in_features), generator=generator
                ).half()
                state[f"{root}.lora_B.weight"] = torch.randn(
                    (out_features, RANK), generator=generator
                ).half()
    return state


def main() -> None:
    model = SimpleNamespace(
        network=SimpleNamespace(network_config=SimpleNamespace(split_multistage_loras=True)),
        train_high_noise=True,
        train_low_noise=True,
    )
    OUTPUT.mkdir(parents=True, exist_ok=True)
    for step in STEPS:
        state = Wan2214bModel.convert_lora_weights_before_save(model, _state_dict(step))
        step_num = f"_{str(step).zfill(9)}" if step else ""
        path = OUTPUT / f"{NAME}{step_num}.safetensors"
        Wan2214bModel.save_lora(model, state, str(path), {"software": "ai-toolkit"})
    print("KURA-REPORT " + json.dumps(sorted(p.name for p in OUTPUT.iterdir())))


if __name__ == "__main__":
    main()
