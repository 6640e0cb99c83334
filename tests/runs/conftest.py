from __future__ import annotations

from pathlib import Path

import pytest

from kura.workspace import Workspace
from tests.builders import character_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return character_workspace(tmp_path)
