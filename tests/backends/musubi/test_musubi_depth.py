"""Qwen-Image's DiT depth (``backend.config.num_layers``, Musubi's ``--num_layers``): the
train argv carries it, the estimator sizes the DiT by it, and compile refuses a DiT file
whose header holds another number of blocks than Musubi will build."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from musubi_cases import make_inputs, make_spec

from kura.backends.musubi.compile import compile_run
from kura.backends.musubi.depth import DitDepth, count_blocks, dit_depth
from kura.errors import InvalidInput, SpecError, Unsupported
from kura.models.layouts import component_fixture, write_sparse_safetensors
from kura.schema.dataset import DatasetSpec
from kura.sizing.shapes import base_model, get_shape, with_depth


def qwen_spec(**config: object) -> object:
    reasons = dict.fromkeys(config, "test")
    return make_spec(
        {"model": {"base": "qwen-image"}, "backend": {"config": dict(config), "reasons": reasons}}
    )


def dit_file(folder: Path, blocks: int, *, prefix: str = "") -> Path:
    """A header-only Qwen-Image DiT of ``blocks`` blocks (the released keys and shapes)."""
    tensors, metadata = component_fixture("qwen-image-dit")
    kept = {
        prefix + key: value
        for key, value in tensors.items()
        if not key.startswith("transformer_blocks.") or int(key.split(".")[1]) < blocks
    }
    return write_sparse_safetensors(folder / f"dit-{blocks}.safetensors", kept, metadata)


def host_inputs(dit: Path) -> object:
    inputs = make_inputs("qwen_image", "original")
    return replace(inputs, model_paths={**inputs.model_paths, "dit": str(dit)})


def train_argv(compiled: object) -> list[str]:
    return list(next(s.argv for s in compiled.steps if s.name == "train"))  # type: ignore[attr-defined]


def test_blocks_are_counted_with_or_without_comfyuis_prefix(tmp_path: Path) -> None:
    assert count_blocks(["transformer_blocks.0.attn.to_q.weight", "img_in.weight"]) == 1
    for prefix in ("", "model.diffusion_model."):
        path = dit_file(tmp_path / (prefix or "plain"), 3, prefix=prefix)
        assert dit_depth(host_inputs(path)) == DitDepth(str(path), 3)


def test_the_header_is_read_only_on_the_host_and_for_qwen_image(tmp_path: Path) -> None:
    path = dit_file(tmp_path, 1)
    assert dit_depth(replace(host_inputs(path), container_image="kura/musubi-tuner:0.3.4")) is None
    assert dit_depth(replace(host_inputs(path), architecture="zimage")) is None
    assert dit_depth(host_inputs(tmp_path / "pending.safetensors")) is None


def test_a_one_block_dit_trains_with_num_layers_1(tmp_path: Path) -> None:
    inputs = host_inputs(dit_file(tmp_path, 1))
    inputs = replace(inputs, trainer_facts=dit_depth(inputs))
    argv = train_argv(compile_run(qwen_spec(num_layers=1), inputs))
    assert argv[argv.index("--num_layers") + 1] == "1"


def test_a_depth_mismatch_is_refused_with_the_value_to_set(tmp_path: Path) -> None:
    small = host_inputs(dit_file(tmp_path, 1))
    small = replace(small, trainer_facts=dit_depth(small))
    with pytest.raises(SpecError, match="has 1 transformer blocks, but Musubi builds") as info:
        compile_run(qwen_spec(), small)
    assert "backend.config.num_layers: 1" in info.value.hint
    with pytest.raises(SpecError, match="num_layers is 2, but the DiT"):
        compile_run(qwen_spec(num_layers=2), small)
    released = host_inputs(dit_file(tmp_path, 60))
    released = replace(released, trainer_facts=dit_depth(released))
    assert "--num_layers" not in train_argv(compile_run(qwen_spec(), released))
    with pytest.raises(SpecError, match="num_layers is 1, but the DiT") as info:
        compile_run(qwen_spec(num_layers=1), released)
    assert "(or drop it)" in info.value.hint


def test_inside_an_image_a_set_depth_is_a_warning(tmp_path: Path) -> None:
    compiled = compile_run(qwen_spec(num_layers=1), make_inputs("qwen_image", "original"))
    assert any("cannot read the DiT inside the image" in w for w in compiled.warnings)
    plain = compile_run(qwen_spec(), make_inputs("qwen_image", "original"))
    assert not any("num_layers" in w for w in plain.warnings)


def test_num_layers_is_a_positive_integer_of_qwen_image_only() -> None:
    inputs = make_inputs("qwen_image", "original")
    with pytest.raises(SpecError, match="num_layers must be ≥ 1"):
        compile_run(qwen_spec(num_layers=0), inputs)
    with pytest.raises(SpecError, match="must be an integer"):
        compile_run(qwen_spec(num_layers="one"), inputs)


def test_the_estimator_sizes_a_one_block_dit() -> None:
    full, one = get_shape("qwen-image"), get_shape(with_depth("qwen-image", 1))
    assert (one.n_blocks, one.swap_limit, base_model(one.id)) == (1, 0, "qwen-image")
    # the one-block bf16 DiT Musubi's classes build: 380,354,624 parameters, 0.708 GiB
    assert one.params_b == pytest.approx(0.380, abs=0.01)
    assert one.weights_gib["none"] == pytest.approx(0.708, abs=0.01)
    # LoRA modules wrap only the blocks: rank 4 of the one-block DiT is 615,424 parameters
    assert 4 * one.lora_params_per_rank == pytest.approx(615_424, rel=0.01)
    assert one.lora_params_per_rank == pytest.approx(full.lora_params_per_rank / 60)
    with pytest.raises(InvalidInput, match=r"1\.\.60 blocks, not 61"):
        get_shape(with_depth("qwen-image", 61))
    with pytest.raises(Unsupported, match="one block list"):
        get_shape(with_depth("flux2-klein-9b", 1))


def photos() -> dict[str, DatasetSpec]:
    facts = {
        "digest": "sha256:0",
        "inspected_at": "2026-01-01",
        "resolution": [64, 64],
        "counts": {"images": 4},
    }
    spec = DatasetSpec.model_validate({"name": "photos", "media": "/data/photos", "facts": facts})
    return {"photos": spec}


def test_a_run_with_num_layers_is_estimated_at_that_depth() -> None:
    from kura.backends.musubi.estimation import estimate_config, swap_limit
    from kura.backends.musubi.estimator.estimate import estimate

    one, full = (estimate_config(spec, photos()) for spec in (qwen_spec(num_layers=1), qwen_spec()))
    assert (one.model, full.model) == ("qwen-image@1-blocks", "qwen-image")
    assert estimate(one).peak_vram_gib < estimate(full).peak_vram_gib / 5
    assert swap_limit("qwen-image", {"num_layers": 1}) == 0
    assert swap_limit("qwen-image", {}) == 59
