"""The sparse fixture writer and component layouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from kura.errors import NotFound, UsageError
from kura.models.header import read_header
from kura.models.layouts import component_fixture, component_layout, write_sparse_safetensors


def test_sparse_file_costs_no_disk(tmp_path: Path) -> None:
    path = write_sparse_safetensors(
        tmp_path / "big.safetensors", component_layout("flux2-klein-9b-dit")
    )
    stat = path.stat()
    assert stat.st_size > 5_000_000_000
    assert stat.st_blocks * 512 < 10_000_000
    assert read_header(path).size == stat.st_size


def test_reference_reader_accepts_fixtures(tmp_path: Path) -> None:
    safetensors = pytest.importorskip("safetensors")
    tensors, metadata = component_fixture("qwen-image-edit-2511-dit", variant="nvfp4")
    path = write_sparse_safetensors(tmp_path / "q.safetensors", tensors, metadata)
    with safetensors.safe_open(str(path), framework="numpy") as handle:
        assert set(handle.keys()) == set(tensors)
        assert handle.metadata() == metadata


def test_prefix_and_variants() -> None:
    layout = component_layout("wan21-vae", prefix="vae.")
    assert all(name.startswith("vae.") for name in layout)
    scaled = component_layout("clip-l", variant="fp8-scaled-comfy")
    assert scaled["scaled_fp8"] == ("F8_E4M3", [0])
    assert any(name.endswith(".scale_weight") for name in scaled)


def test_unknown_component_and_variant() -> None:
    with pytest.raises(NotFound):
        component_layout("flux3-dit")
    with pytest.raises(UsageError):
        component_layout("clip-l", variant="int3")
    with pytest.raises(UsageError):
        write_sparse_safetensors(Path("unused"), {"x": ("F4", [3])})
