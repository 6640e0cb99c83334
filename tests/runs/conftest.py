from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from kura.dataset.registry import add_dataset, set_dataset_values
from kura.workspace import Workspace, init_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace, _ = init_workspace(tmp_path / "ws")
    source = tmp_path / "incoming"
    source.mkdir()
    for index in range(3):
        Image.new("RGB", (768, 512), (60 * index, 80, 120)).save(source / f"{index}.png")
        (source / f"{index}.txt").write_text(f"myaku, picture {index}\n")
    add_dataset(workspace, "myaku", source, resolution=(1024, 1024))
    set_dataset_values(workspace, "myaku", ["intent.task=character"])
    return workspace
