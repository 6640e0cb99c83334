"""docs/sweeps.md, where a user reads about the space file, names every field the schema
takes, and its example is a valid space file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kura.sweep.space import Axis, EarlyStop, Objective, SpaceFile, load_space

DOC = Path(__file__).resolve().parents[2] / "docs" / "sweeps.md"


@pytest.mark.parametrize("model", [SpaceFile, Axis, Objective, EarlyStop])
def test_every_field_of_the_space_file_is_described(model: type) -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in model.model_fields if f"`{name}`" not in text]
    assert missing == [], f"docs/sweeps.md does not describe {missing}"


def test_the_documented_example_is_a_valid_space_file(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert example is not None
    path = tmp_path / "space.yaml"
    path.write_text(example.group(1), encoding="utf-8")
    spec, _ = load_space(path)
    assert set(spec.axes) == {
        "training.learning_rate",
        "training.network.rank",
        "training.max_steps",
    }


def test_the_readme_points_to_it() -> None:
    readme = (DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    assert "(docs/sweeps.md)" in readme
