"""Shape table: coverage, sources, lookups and Musubi's block-swap split."""

from __future__ import annotations

import pytest

from kura.backends.musubi.estimator.memory import swap_split
from kura.errors import NotFound
from kura.sizing.shapes import (
    ARCHITECTURE_IDS,
    MODEL_SHAPES,
    get_shape,
    shapes_for_architecture,
)


def test_every_architecture_has_a_model() -> None:
    from kura.models.bundles import list_bundles

    covered = {shape.architecture for shape in MODEL_SHAPES.values()}
    assert covered == {b.architecture for b in list_bundles() if b.backend == "musubi-tuner"}
    assert covered <= set(ARCHITECTURE_IDS)


@pytest.mark.parametrize("shape", MODEL_SHAPES.values(), ids=lambda shape: shape.id)
def test_every_record_is_sourced_and_consistent(shape) -> None:
    assert shape.architecture in ARCHITECTURE_IDS
    for key in ("shape", "weights", "activations", "swap"):
        assert shape.sources.get(key), f"{shape.id} lacks a source for {key}"
    assert shape.fp8_modes, shape.id
    assert 0 < shape.swap_limit < shape.n_blocks + 1
    # fp8 never weighs more than bf16, and a block's bytes never exceed the whole model's.
    if "none" in shape.weights_gib:
        assert all(value <= shape.weights_gib["none"] for value in shape.weights_gib.values())
        stored = sum(group.count * group.lin_mib_bf16 for group in shape.groups) / 1024
        assert stored <= shape.weights_gib["none"] * 1.01


def test_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(NotFound) as info:
        get_shape("flux3-ultra")
    assert "qwen-image" in info.value.hint
    assert "flux2-klein-9b" in info.value.hint


def test_architecture_lookup() -> None:
    ids = {shape.id for shape in shapes_for_architecture("flux2")}
    assert ids == {"flux2-dev", "flux2-klein-9b", "flux2-klein-4b"}
    with pytest.raises(NotFound):
        shapes_for_architecture("sdxl")


# vram.md §2.1's split table, which flux_2/flux2_models.py reproduces.
FLUX2_SPLITS = {
    "flux2-dev": {
        1: (0, 1),
        3: (1, 6),
        6: (2, 12),
        11: (3, 18),
        14: (4, 24),
        22: (6, 36),
        29: (6, 44),
    },
    "flux2-klein-9b": {2: (1, 3), 4: (2, 6), 7: (3, 9), 9: (4, 12), 12: (5, 15), 16: (6, 18)},
    "flux2-klein-4b": {2: (1, 4), 5: (2, 8), 8: (3, 12), 11: (3, 18), 13: (3, 18)},
}


@pytest.mark.parametrize(
    ("model", "n", "expected"),
    [(model, n, split) for model, table in FLUX2_SPLITS.items() for n, split in table.items()],
)
def test_flux2_swap_split_matches_the_table(model: str, n: int, expected: tuple[int, int]) -> None:
    split = swap_split(get_shape(model), n)
    assert (split["double"], split["single"]) == expected


@pytest.mark.parametrize(
    ("model", "n", "expected"),
    [
        ("flux1-kontext-dev", 34, {"double": 17, "single": 35}),
        ("hunyuan-video", 38, {"double": 19, "single": 39}),
        ("kandinsky5-pro-video", 60, {"text": 2, "visual": 58}),
        ("kandinsky5-lite-video", 31, {"text": 1, "visual": 30}),
        ("qwen-image", 45, {"main": 45}),
        ("zimage", 28, {"main": 28}),
    ],
)
def test_swap_split_at_the_limit(model: str, n: int, expected: dict[str, int]) -> None:
    shape = get_shape(model)
    split = swap_split(shape, n)
    assert split == expected
    for group in shape.groups:
        assert split.get(group.name, 0) <= group.count
