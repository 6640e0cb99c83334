"""The README's first quick start installs what the demo's next steps need: the demo ends
by pointing to `kura serve`, which needs the web extra."""

from __future__ import annotations

import re
from pathlib import Path

from kura.cli.nexts import after_demo

README = Path(__file__).resolve().parents[2] / "README.md"


def _quick_start_one() -> str:
    text = README.read_text(encoding="utf-8")
    block = text[text.index("## Quick start") :]
    block = block[block.index("# 1.") : block.index("# 2.")]
    return block


def test_the_demo_quick_start_installs_the_extra_its_next_step_needs() -> None:
    commands = [step["command"] for step in after_demo({"workspace": "kura-demo/workspace"})]
    assert any(command.endswith(" serve") for command in commands)
    install = re.search(r"pip install -e (\S+)", _quick_start_one())
    assert install is not None
    assert "web" in install.group(1), install.group(0)


def test_the_quick_start_shows_the_served_page_of_the_demo_workspace() -> None:
    assert "kura --workspace ./kura-demo/workspace serve" in _quick_start_one()
