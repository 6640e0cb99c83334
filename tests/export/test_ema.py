"""Post-hoc EMA: Musubi's beta schedule, float32 numerics, dtypes kept."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from kura.errors import CheckFailed, UsageError
from kura.export.ema import ema_betas, merge_ema_files
from kura.export.tensorio import read_tensors
from tests.export.lorafiles import write_lora

BF16 = ml_dtypes.bfloat16


def checkpoint(path: Path, value: float, *, alpha: float = 4.0, step: int = 0) -> Path:
    tensors = {
        "lora_unet_blocks_0_ffn_0.lora_down.weight": np.full((2, 3), value, np.float32).astype(
            BF16
        ),
        "lora_unet_blocks_0_ffn_0.lora_up.weight": np.full((4, 2), 2 * value, np.float32),
        "lora_unet_blocks_0_ffn_0.alpha": np.asarray(alpha, np.float32).astype(BF16),
        "counter": np.asarray([step], np.int64),
    }
    return write_lora(path, tensors, {"ss_epoch": str(step), "sshs_model_hash": "x"})


def test_betas_follow_musubis_linear_schedule() -> None:
    assert ema_betas(2, 0.9) == [0.9]
    assert ema_betas(4, 0.9) == [0.9, 0.9, 0.9]
    assert ema_betas(4, 0.9, 0.6) == pytest.approx([0.9, 0.75, 0.6])
    with pytest.raises(UsageError, match="outside"):
        ema_betas(3, 1.5)


def test_ema_matches_a_hand_computation(tmp_path: Path) -> None:
    paths = [
        checkpoint(tmp_path / f"e{i}.safetensors", v, step=i) for i, v in enumerate([1.0, 2.0, 4.0])
    ]
    tensors, metadata, betas = merge_ema_files(paths, 0.8, 0.5)
    assert betas == pytest.approx([0.8, 0.5])
    expected = (1.0 * 0.8 + 2.0 * 0.2) * 0.5 + 4.0 * 0.5  # 2.7
    down = tensors["lora_unet_blocks_0_ffn_0.lora_down.weight"]
    up = tensors["lora_unet_blocks_0_ffn_0.lora_up.weight"]
    assert down.dtype == BF16 and up.dtype == np.float32
    np.testing.assert_allclose(
        down.astype(np.float32), np.asarray(expected, BF16).astype(np.float32)
    )
    np.testing.assert_allclose(up, 2 * expected, rtol=1e-6)
    assert tensors["counter"].tolist() == [0]  # non-float tensors come from the first file
    assert float(tensors["lora_unet_blocks_0_ffn_0.alpha"].astype(np.float32)) == 4.0
    assert metadata["ss_epoch"] == "2"  # metadata of the last file


def test_ema_refuses_differing_alphas_and_single_files(tmp_path: Path) -> None:
    a = checkpoint(tmp_path / "a.safetensors", 1.0)
    b = checkpoint(tmp_path / "b.safetensors", 2.0, alpha=8.0)
    with pytest.raises(CheckFailed, match="alpha"):
        merge_ema_files([a, b], 0.9)
    with pytest.raises(UsageError, match="two"):
        merge_ema_files([a], 0.9)


def test_tensor_files_round_trip_bf16_and_fp8(tmp_path: Path) -> None:
    tensors = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3).astype(BF16),
        "b": np.linspace(-1, 1, 4).astype(ml_dtypes.float8_e4m3fn),
        "c": np.asarray(3.0, np.float32),
    }
    path = write_lora(tmp_path / "t.safetensors", tensors, {"k": "v"})
    back, metadata = read_tensors(path)
    assert metadata == {"k": "v"}
    for key, value in tensors.items():
        assert back[key].dtype == value.dtype and back[key].shape == value.shape
        np.testing.assert_array_equal(back[key].astype(np.float32), value.astype(np.float32))
