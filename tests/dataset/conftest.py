"""Fixtures for the dataset-inspection tests (the builders live in ``dataset_builders``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dataset_builders import Builder


@pytest.fixture
def build(tmp_path: Path) -> Builder:
    return Builder(tmp_path / "data")
