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
from kura.backends.base import DoctorReport

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = ["CHECKOUT_MARKER", "aitk_doctor"]

CHECKOUT_MARKER = Path("run.py")
"""The entry every AI-Toolkit checkout has at its root."""


def aitk_doctor(workspace: Workspace | None) -> DoctorReport:
    from kura.doctor import checkout_finding, docker_findings, gpu_findings, image_findings

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
        findings.append(
            checkout_finding(
                checkout,
                check="ai-toolkit checkout",
                marker=CHECKOUT_MARKER,
                trainer="an AI-Toolkit",
                pinned=f"commit {AITK_COMMIT[:7]}",
                toml_key="aitk_checkout",
            )
        )
    return DoctorReport("ai-toolkit", tuple(findings), {"image": recipe.tag})
