"""The space file against the backend's searchable keys: every bad axis is a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kura.backends.registry import get_backend
from kura.errors import SpecError
from kura.sweep.space import check_space, load_space


def _check(tmp_path: Path, text: str, backend: str = "toy-trainer") -> object:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    spec, digest = load_space(path)
    return check_space(
        spec, digest, get_backend(backend).search_keys("zimage"), backend=backend, source=path
    )


def test_a_good_space_has_typed_axes(tmp_path: Path, toy_env: object) -> None:
    space = _check(
        tmp_path,
        "axes:\n  training.learning_rate: {low: 1.0e-5, high: 1.0e-3, log: true}\n"
        "  training.network.rank: {choices: [8, 16]}\n"
        "  training.max_steps: {low: 4, high: 12, step: 4}\n",
    )
    kinds = {a.key: a.kind for a in space.axes}  # type: ignore[attr-defined]
    assert kinds == {
        "training.learning_rate": "float",
        "training.network.rank": "choice",
        "training.max_steps": "int",
    }


@pytest.mark.parametrize(
    ("axis", "message", "hint"),
    [
        (
            "training.scheduler: {choices: [cosine]}",
            "not a key backend toy-trainer lets",
            "searchable keys: training.learning_rate",
        ),
        (
            "backend.config.shrink_activations: {choices: [true, false]}",
            "not a recipe key",
            "memory aids",
        ),
        (
            "training.learning_rate: {low: 0.0, high: 0.1}",
            "outside the trainer's limits",
            "narrow the range to (0.0, 1.0]",
        ),
        ("training.network.rank: {low: 1, high: 4096}", "4096 is outside", "[1, 512]"),
        (
            "training.optimizer: {choices: [prodigy]}",
            "not a value the trainer accepts",
            "adamw, sgd",
        ),
        ("training.network.rank: {low: 1.5, high: 8}", "takes whole numbers", ""),
    ],
)
def test_bad_axes_name_the_fix(
    tmp_path: Path, toy_env: object, axis: str, message: str, hint: str
) -> None:
    with pytest.raises(SpecError, match=message) as caught:
        _check(tmp_path, f"axes:\n  {axis}\n")
    assert hint in (caught.value.hint or "")
    assert "space.yaml" in caught.value.message


def test_an_unknown_key_in_the_space_file_is_refused(tmp_path: Path, toy_env: object) -> None:
    with pytest.raises(SpecError, match="unknown key `trials`"):
        _check(
            tmp_path, "axes:\n  training.learning_rate: {low: 1.0e-5, high: 1.0e-3}\ntrials: 4\n"
        )


def test_musubi_exposes_its_parsers_keys_and_no_heldout_loss(tmp_path: Path) -> None:
    keys = get_backend("musubi-tuner").search_keys("zimage")
    assert keys.heldout_loss is False
    assert "training.discrete_flow_shift" in keys.keys
    assert not any(k.startswith("backend.") for k in keys.keys)
    assert "rex" in keys.keys["training.scheduler"].choices
    unset = _check(
        tmp_path,
        "axes:\n  training.learning_rate: {low: 1.0e-5, high: 1.0e-3}\n",
        backend="musubi-tuner",
    )
    assert unset.spec.objective.metric == "train_loss"  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match="reports no held-out loss") as caught:
        _check(
            tmp_path,
            "axes:\n  training.learning_rate: {low: 1.0e-5, high: 1.0e-3}\n"
            "objective: {metric: heldout_loss}\n",
            backend="musubi-tuner",
        )
    assert "train_loss" in (caught.value.hint or "")
    # an optimizer class by dotted path is accepted, as Musubi's get_optimizer does
    _check(
        tmp_path,
        "axes:\n  training.optimizer: {choices: [adamw8bit, bitsandbytes.optim.AdEMAMix8bit]}\n"
        "objective: {metric: train_loss}\n",
        backend="musubi-tuner",
    )


def test_kohakumoss_accepts_the_held_out_loss_objective(tmp_path: Path) -> None:
    keys = get_backend("kohakumoss").search_keys("moss_image")
    assert keys.heldout_loss is True
    path = tmp_path / "space.yaml"
    path.write_text(
        "axes:\n  training.learning_rate: {low: 1.0e-5, high: 1.0e-3}\n"
        "objective: {metric: heldout_loss}\n"
    )
    spec, digest = load_space(path)
    space = check_space(spec, digest, keys, backend="kohakumoss", source=path)
    path.write_text("axes:\n  training.learning_rate: {low: 1.0e-5, high: 1.0e-3}\n")
    unset, _ = load_space(path)
    assert check_space(unset, digest, keys, backend="kohakumoss", source=path).spec == unset
    assert space.spec.objective.metric == "heldout_loss"  # type: ignore[attr-defined]
