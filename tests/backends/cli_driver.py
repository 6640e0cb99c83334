"""``kura --workspace WS … --json`` in-process, as the real-run tests drive every trainer."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from kura.cli.main import main


class Kura:
    """One workspace's CLI: each call returns the exit code and the JSON document (for
    ``run watch``, its JSON lines' last one, the final state); ``ok`` asserts exit 0."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace

    def __call__(self, *argv: str, ok: bool = True) -> tuple[int, Any]:
        out = io.StringIO()
        code = main(["--workspace", str(self.workspace), *argv, "--json"], stdout=out)
        text = out.getvalue().strip()
        if argv[:2] == ("run", "watch"):
            lines = [json.loads(line) for line in text.splitlines()]
            doc = lines[-1] if lines else None
        else:
            doc = json.loads(text) if text else None
        if ok:
            assert code == 0, (argv, code, text[-3000:])
        return code, doc
