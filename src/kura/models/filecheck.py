"""`kura model check` as a library call: identify files, judge roles, cross-check the set."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kura.errors import KuraError
from kura.models.checks import check_role, cross_check
from kura.models.identify import ModelReport, identify

__all__ = ["check_files"]


def check_files(
    paths: Sequence[Path], *, architecture: str | None = None, role: str | None = None
) -> dict[str, Any]:
    """The ``model-check`` document: one entry per file (report + verdict, or the error that
    stopped it being read) and the cross-checks between readable files. ``ok`` is false when
    any file is refused, unreadable, or a cross-check finds a mismatch."""
    entries: list[dict[str, Any]] = []
    reports: list[ModelReport] = []
    for path in paths:
        try:
            report = identify(path)
        except KuraError as error:
            entries.append(
                {
                    "path": str(path),
                    "error": error.to_dict(),
                    "verdict": {"status": "refused", "refusals": [error.message], "warnings": []},
                }
            )
            continue
        reports.append(report)
        verdict = check_role(report, architecture, role)
        entries.append({**report.to_dict(), "verdict": verdict.to_dict()})
    crosses = [c.to_dict() for c in cross_check(reports)]
    refused = any(e["verdict"]["status"] == "refused" for e in entries) or any(
        c["status"] == "mismatch" for c in crosses
    )
    return {
        "kind": "model-check",
        "ok": not refused,
        "architecture": architecture,
        "role": role,
        "files": entries,
        "cross_checks": crosses,
    }
