"""``kura doctor musubi``: what Musubi's Docker executor needs on this machine.

The GPUs, the Docker engine and its NVIDIA runtime, and the Musubi image at the release Kura
compiles for (its release label, written by ``kura image build musubi``). The host executor
runs a checkout kura.toml names; when one is set, it must be a Musubi checkout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import DoctorReport
from kura.backends.musubi.adapters import MUSUBI_RELEASE
from kura.backends.musubi.container import image_recipe

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = ["CHECKOUT_MARKER", "musubi_doctor"]

CHECKOUT_MARKER = Path("src") / "musubi_tuner"
"""The package folder every Musubi checkout has (its scripts live under it)."""


def musubi_doctor(workspace: Workspace | None) -> DoctorReport:
    from kura.doctor import checkout_finding, docker_findings, gpu_findings, image_findings

    recipe = image_recipe(workspace)
    findings = [*gpu_findings(), *docker_findings()]
    if not any(f.check == "docker" and f.status == "fail" for f in findings):
        findings += image_findings(
            recipe, check="musubi image", title="Musubi", command="kura image build musubi --run"
        )
    checkout = workspace.config().executor.musubi_checkout if workspace else None
    if checkout:
        findings.append(
            checkout_finding(
                checkout,
                check="musubi checkout",
                marker=CHECKOUT_MARKER,
                trainer="a Musubi Tuner",
                pinned=f"Musubi {MUSUBI_RELEASE}",
                toml_key="musubi_checkout",
            )
        )
    return DoctorReport("musubi-tuner", tuple(findings), {"image": recipe.tag})
