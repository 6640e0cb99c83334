"""Precision detection reads ComfyUI's ``_quantization_metadata`` JSON within Kura's bounds."""

from __future__ import annotations

import json

import pytest

from kura.models.header import TensorInfo
from kura.models.quant import detect_precision

WEIGHT = {"blocks.0.weight": TensorInfo("F8_E4M3", (4, 4), 0, 16, 16)}


@pytest.mark.parametrize(
    "raw",
    [
        '{"layers":' * 3000 + "{}" + "}" * 3000,
        '{"layers": {"a": {"format": ' + "1" * 5000 + "}}}",
        '{"layers": NaN}',
    ],
    ids=["deep", "huge integer", "NaN"],
)
def test_damaged_quantization_metadata_still_names_comfy_mixed(raw: str) -> None:
    precision = detect_precision(WEIGHT, {"_quantization_metadata": raw})
    assert precision.quantization == "comfy-mixed"


def test_readable_quantization_metadata_gives_its_formats() -> None:
    raw = json.dumps({"layers": {"blocks.0": {"format": "float8_e4m3fn"}}})
    assert detect_precision(WEIGHT, {"_quantization_metadata": raw}).formats == ("float8_e4m3fn",)
