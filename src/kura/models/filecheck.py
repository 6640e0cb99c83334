"""`kura model check` as a library call: identify files, judge roles, cross-check the set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kura.errors import KuraError
from kura.models.checks import CrossCheck, RoleVerdict, check_role, cross_check
from kura.models.identify import ModelReport, identify
from kura.nextsteps import NextStep, next_list

if TYPE_CHECKING:
    from kura.backends.base import Backend

__all__ = ["FileCheck", "ModelCheck", "check_files"]


@dataclass(frozen=True)
class FileCheck:
    """One file of ``kura model check``: what its header says (``report``) and the role
    verdict, or, for a file that could not be read, ``error`` (the error's document) and
    a refusal naming it."""

    path: str
    report: ModelReport | None
    verdict: RoleVerdict
    error: Mapping[str, str | None] | None = None

    def to_dict(self) -> dict[str, object]:
        if self.report is None:
            return {
                "path": self.path,
                "error": None if self.error is None else dict(self.error),
                "verdict": {
                    "status": self.verdict.status,
                    "refusals": list(self.verdict.refusals),
                    "warnings": list(self.verdict.warnings),
                },
            }
        return {**self.report.to_dict(), "verdict": self.verdict.to_dict()}


@dataclass(frozen=True)
class ModelCheck:
    """``kura model check``: one entry per file and the cross-checks between the readable
    ones; ``ok`` is false when any file is refused or unreadable, or a cross-check finds a
    mismatch."""

    architecture: str | None
    role: str | None
    files: tuple[FileCheck, ...]
    cross_checks: tuple[CrossCheck, ...]
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "model-check"

    @property
    def ok(self) -> bool:
        return not (
            any(f.verdict.status == "refused" for f in self.files)
            or any(c.status == "mismatch" for c in self.cross_checks)
        )

    @property
    def unreadable(self) -> bool:
        """Whether a file is malformed or not safetensors at all."""
        return any(f.report is None for f in self.files)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "ok": self.ok,
            "architecture": self.architecture,
            "role": self.role,
            "files": [f.to_dict() for f in self.files],
            "cross_checks": [c.to_dict() for c in self.cross_checks],
            "next": next_list(*self.next),
        }


def check_files(
    paths: Sequence[Path],
    *,
    architecture: str | None = None,
    role: str | None = None,
    backend: Backend | None = None,
) -> ModelCheck:
    """Identify each file (or keep the error that stopped it being read), judge it for the
    role with ``backend``'s file rules (None: the backend that serves ``architecture`` by
    default, :func:`kura.models.checks.rules_backend`), and cross-check the readable files."""
    entries: list[FileCheck] = []
    reports: list[ModelReport] = []
    for path in paths:
        try:
            report = identify(path)
        except KuraError as error:
            refused = RoleVerdict(architecture, role, "refused", refusals=(error.message,))
            entries.append(FileCheck(str(path), None, refused, error=error.to_dict()))
            continue
        reports.append(report)
        entries.append(
            FileCheck(report.path, report, check_role(report, architecture, role, backend=backend))
        )
    return ModelCheck(
        architecture=architecture,
        role=role,
        files=tuple(entries),
        cross_checks=tuple(cross_check(reports)),
    )
