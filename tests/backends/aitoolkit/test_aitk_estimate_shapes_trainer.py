"""Kura's Chroma and SDXL shapes against the trainer's own classes, counted on the meta device
by ``aitk_shapes_harness.py`` in the AI-Toolkit environment (``KURA_AITK_ENV``) over the
checkout ``KURA_AITK_SRC``. Skipped without both (failing under ``CI=true``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.backends.trainer_required import missing

from kura.backends.aitoolkit.estimator.components import COMPONENTS
from kura.sizing.shapes import GIB, MIB, get_shape
from kura.sizing.steptime import linear_params

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def counted() -> dict[str, Any]:
    src, env = os.environ.get("KURA_AITK_SRC"), os.environ.get("KURA_AITK_ENV")
    python = Path(env or "/nonexistent") / "bin" / "python"
    if not src or not python.is_file():
        missing("set KURA_AITK_SRC and KURA_AITK_ENV to count AI-Toolkit's own models")
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environ["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [str(python), str(HERE / "aitk_shapes_harness.py"), src],
        capture_output=True,
        text=True,
        timeout=600,
        env=environ,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("KURA-REPORT "))
    report: dict[str, Any] = json.loads(line[len("KURA-REPORT ") :])
    return report


def test_chromas_shape_is_ai_toolkits_chroma(counted: dict[str, Any]) -> None:
    theirs, shape = counted["chroma"], get_shape("chroma1")
    assert theirs["params"] / 1e9 == pytest.approx(shape.params_b, abs=0.005)
    assert theirs["params"] * 2 / GIB == pytest.approx(shape.weights_gib["none"], abs=0.01)
    for group in shape.groups:
        count, weights = theirs[group.name]
        assert (group.count, weights * 2 / MIB) == (count, pytest.approx(group.lin_mib_bf16))
    assert theirs["lora_per_rank"] == pytest.approx(shape.lora_params_per_rank, rel=0.002)
    assert theirs["lora_modules"] == shape.lora_modules
    assert theirs["heads"] == COMPONENTS["chroma"].attention_mask_heads


def test_sdxls_unet_shape_adds_up_to_diffusers_unet(counted: dict[str, Any]) -> None:
    theirs, shape = counted["sdxl"], get_shape("sdxl-unet")
    assert theirs["params"] / 1e9 == pytest.approx(shape.params_b, abs=0.001)
    assert theirs["params"] * 2 / GIB == pytest.approx(shape.weights_gib["none"], abs=0.01)
    groups = {g.name: g for g in shape.groups}
    assert theirs["layers_by_width"] == {
        "1280": groups["attn_32"].count,
        "640": groups["attn_64"].count,
    }
    # The blocks' weights and what lies outside them (cross-attention k/v, ~25 M of time
    # embeddings and norms) make up the UNet.
    outside = theirs["params"] - linear_params(shape)
    assert outside - theirs["cross_kv"] == pytest.approx(25e6, rel=0.1)
    assert theirs["lora_per_rank"] == pytest.approx(shape.lora_params_per_rank, rel=0.002)
    assert theirs["lora_modules"] == shape.lora_modules
