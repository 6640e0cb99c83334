"""The schema of ``kura.toml``: the workspace's settings.

Read by :meth:`kura.workspace.Workspace.config`, which imports this module only when a
command asks for a setting: finding the workspace and listing its runs build no model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kura.schema.base import StrictModel
from kura.schema.cloud import SkyPilotSettings

__all__ = ["ExecutorDefaults", "WorkspaceConfig"]


class ExecutorDefaults(StrictModel):
    """``[executor]`` in kura.toml: where runs execute and where each trainer lives."""

    default: Literal["docker", "host", "skypilot"] = Field(
        "docker", description="The executor `kura run new` drafts (execution.executor)."
    )
    musubi_image: str = Field(
        "kura/musubi-tuner:0.3.4",
        description="The Musubi Tuner image the docker and skypilot executors run.",
    )
    musubi_checkout: str | None = Field(
        None,
        description="A Musubi Tuner 0.3.4 checkout: the source `kura backend install musubi` "
        "installs from when no --source is given.",
    )
    musubi_env: str | None = Field(
        None,
        description="Musubi Tuner's virtual environment, which the host executor runs "
        "(`kura backend install musubi` makes it; KURA_MUSUBI_ENV overrides this).",
    )
    kohakumoss_env: str | None = Field(
        None,
        description="KohakuMoss's virtual environment (`kura backend install kohakumoss` "
        "makes it; KURA_KOHAKUMOSS_ENV overrides this).",
    )
    aitk_checkout: str | None = Field(
        None,
        description="An AI-Toolkit checkout at the pinned commit: the source `kura backend "
        "install ai-toolkit` installs from when no --source is given.",
    )
    aitk_env: str | None = Field(
        None,
        description="AI-Toolkit's virtual environment, which the host executor runs "
        "(`kura backend install ai-toolkit` makes it; KURA_AITK_ENV overrides this).",
    )


class WorkspaceConfig(StrictModel):
    """The schema of ``kura.toml``."""

    version: int = 1
    executor: ExecutorDefaults = ExecutorDefaults()
    skypilot: SkyPilotSettings = SkyPilotSettings()
