"""``kura doctor musubi``: what Musubi's Docker executor needs on this machine.

The GPUs, the Docker engine and its NVIDIA runtime, and the Musubi image at the release Kura
compiles for (its release label, written by ``kura image build musubi``). The host executor
runs a checkout kura.toml names; when one is set, it must be a Musubi checkout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import DoctorReport, Finding
from kura.backends.musubi.adapters import MUSUBI_RELEASE
from kura.backends.musubi.container import image_recipe

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = ["musubi_doctor"]

_ENTRY = Path("src") / "musubi_tuner"
"""The package folder every Musubi checkout has (its scripts live under it)."""


def musubi_doctor(workspace: Workspace | None) -> DoctorReport:
    from kura.doctor import docker_findings, gpu_findings, image_findings

    recipe = image_recipe(workspace)
    findings = [*gpu_findings(), *docker_findings()]
    if not any(f.check == "docker" and f.status == "fail" for f in findings):
        findings += image_findings(
            recipe, check="musubi image", title="Musubi", command="kura image build musubi --run"
        )
    checkout = workspace.config().executor.musubi_checkout if workspace else None
    if checkout:
        found = (Path(checkout) / _ENTRY).is_dir()
        findings.append(
            Finding(
                "musubi checkout",
                "ok" if found else "fail",
                f"{checkout} (host executor; Kura compiles for Musubi {MUSUBI_RELEASE})"
                if found
                else f"{checkout} has no {_ENTRY}: not a Musubi Tuner checkout",
                "" if found else "set musubi_checkout in kura.toml to a Musubi Tuner checkout",
            )
        )
    return DoctorReport("musubi-tuner", tuple(findings), {"image": recipe.tag})
