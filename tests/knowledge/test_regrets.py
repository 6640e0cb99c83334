from __future__ import annotations

from pathlib import Path

import pytest

from kura.errors import UsageError
from kura.initialize import init_workspace
from kura.knowledge.regrets import append_regret, matching_regrets, read_regrets


def test_append_and_match_by_every_trigger_word(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path)
    append_regret(workspace, "flux2 fp8_scaled -> check skin texture at epoch 4", source="run r1")
    append_regret(
        workspace, "wan video -> 81 frames ran out of host RAM", source="owner (2026-11-30)"
    )
    regrets = read_regrets(workspace)
    assert [r.source for r in regrets] == ["run r1", "owner (2026-11-30)"]
    hits = matching_regrets(regrets, {"flux2", "character", "fp8_scaled", "adamw8bit"})
    assert [r.reminder for r in hits] == ["check skin texture at epoch 4"]
    assert matching_regrets(regrets, {"flux2", "character"}) == []


def test_a_line_without_arrow_is_refused(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path)
    with pytest.raises(UsageError, match="trigger -> reminder"):
        append_regret(workspace, "just a thought", source="owner")
    assert not (workspace.knowledge_dir / "regrets.md").exists()
