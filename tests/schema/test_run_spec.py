"""The run.yaml schema: recipe keys, backend section, and what it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from kura.errors import SpecError
from kura.schema.base import validate_spec
from kura.schema.run import RunSpec


def run(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "r1",
        "model": {"base": "zimage-base"},
        "datasets": [{"name": "d"}],
    }
    data.update(extra)
    return data


def test_minimal_run_validates_with_visible_defaults() -> None:
    spec = validate_spec(RunSpec, run(), source="run.yaml")
    assert spec.backend.name == "musubi-tuner"
    assert spec.training.save_precision == "fp32"
    assert spec.training.sample_prompts == []
    assert spec.datasets[0].frame_extraction is None


def test_unknown_key_is_named() -> None:
    with pytest.raises(SpecError, match=r"unknown key `training\.learning_rat`"):
        validate_spec(RunSpec, run(training={"learning_rat": 1}), source="run.yaml")


def test_video_dataset_keys() -> None:
    spec = validate_spec(
        RunSpec,
        run(
            datasets=[
                {"name": "v", "frames": [1, 25], "frame_extraction": "slide", "frame_stride": 4}
            ]
        ),
        source="run.yaml",
    )
    assert spec.datasets[0].frame_stride == 4


def test_bad_frame_extraction() -> None:
    with pytest.raises(SpecError, match="frame_extraction"):
        validate_spec(
            RunSpec, run(datasets=[{"name": "v", "frame_extraction": "random"}]), source="run.yaml"
        )


def test_sample_prompts_need_a_schedule() -> None:
    with pytest.raises(SpecError, match="sample_every_n_epochs"):
        validate_spec(RunSpec, run(training={"sample_prompts": ["a cat"]}), source="run.yaml")
    spec = validate_spec(
        RunSpec,
        run(training={"sample_prompts": ["a cat"], "sample_every_n_epochs": 2}),
        source="run.yaml",
    )
    assert spec.training.sample_every_n_epochs == 2


def test_timestep_window_must_be_ordered() -> None:
    with pytest.raises(SpecError, match="min_timestep"):
        validate_spec(
            RunSpec, run(training={"min_timestep": 900, "max_timestep": 100}), source="run.yaml"
        )


def test_timestep_boundary_is_an_integer_in_range() -> None:
    with pytest.raises(SpecError, match="timestep_boundary"):
        validate_spec(RunSpec, run(training={"timestep_boundary": 0.9}), source="run.yaml")
    with pytest.raises(SpecError, match="timestep_boundary"):
        validate_spec(RunSpec, run(training={"timestep_boundary": 1001}), source="run.yaml")


def test_save_precision_choices() -> None:
    with pytest.raises(SpecError, match="save_precision"):
        validate_spec(RunSpec, run(training={"save_precision": "fp8"}), source="run.yaml")


def test_reason_for_a_key_that_is_not_set() -> None:
    with pytest.raises(SpecError, match="blocks_to_swap"):
        validate_spec(
            RunSpec,
            run(backend={"config": {}, "reasons": {"blocks_to_swap": "24 GB card"}}),
            source="run.yaml",
        )


def test_backend_config_is_free_form_here() -> None:
    spec = validate_spec(
        RunSpec,
        run(
            backend={
                "config": {"blocks_to_swap": 10, "command": ["a", "b"]},
                "reasons": {"blocks_to_swap": "vram"},
            }
        ),
        source="run.yaml",
    )
    assert spec.backend.config["command"] == ["a", "b"]


def test_control_resolution_shape() -> None:
    with pytest.raises(SpecError, match="control_resolution"):
        validate_spec(
            RunSpec,
            run(datasets=[{"name": "p", "control_resolution": [1, 2, 3]}]),
            source="run.yaml",
        )
