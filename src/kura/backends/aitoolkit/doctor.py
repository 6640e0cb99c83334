"""``kura doctor ai-toolkit``: what AI-Toolkit's executors need on this machine.

The GPUs, the Docker engine and its NVIDIA runtime, and the AI-Toolkit image at the release
Kura compiles for (its release label, written by ``kura image build ai-toolkit``). The host
executor runs ``run.py`` from the checkout kura.toml names; when one is set, it must hold it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.aitoolkit.archs import AITK_COMMIT
from kura.backends.aitoolkit.container import image_recipe
from kura.backends.base import DoctorReport, Finding

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = ["aitk_doctor"]


def aitk_doctor(workspace: Workspace | None) -> DoctorReport:
    from kura.doctor import docker_findings, gpu_findings, image_findings

    recipe = image_recipe()
    findings = [*gpu_findings(), *docker_findings()]
    if not any(f.check == "docker" and f.status == "fail" for f in findings):
        findings += image_findings(
            recipe,
            check="ai-toolkit image",
            title="AI-Toolkit",
            command="kura image build ai-toolkit --run",
        )
    checkout = workspace.config().executor.aitk_checkout if workspace else None
    if checkout:
        found = (Path(checkout) / "run.py").is_file()
        findings.append(
            Finding(
                "ai-toolkit checkout",
                "ok" if found else "fail",
                f"{checkout} (host executor; Kura compiles for commit {AITK_COMMIT[:7]})"
                if found
                else f"{checkout} has no run.py: not an AI-Toolkit checkout",
                "" if found else "set aitk_checkout in kura.toml to an AI-Toolkit checkout",
            )
        )
    return DoctorReport("ai-toolkit", tuple(findings), {"image": recipe.tag})
