"""The AI-Toolkit environment for the tests that run the real trainer.

Tests that drive it use ``aitk_env``: the environment Kura would use (``KURA_AITK_ENV``,
else the default location), made by ``kura backend install ai-toolkit --source DIR`` (its
record names the checkout). Locally, without it, they are skipped with the reason; under CI
(``CI=true``) a missing environment fails them, because ``.ci/run`` installs it first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.backends.trainer_required import missing

from kura.backends.aitoolkit.env import installed_checkout, workspace_env
from kura.backends.aitoolkit.tiny import TinyPipeline, build_tiny
from kura.backends.trainer_env import EnvLocation
from kura.errors import KuraError


@pytest.fixture(scope="session")
def aitk_env() -> EnvLocation:
    location = workspace_env(None)
    try:
        if not location.present:
            raise KuraError(f"nothing installed at {location.path}")
        installed_checkout(location)
    except KuraError as error:
        reason = (
            f"no usable AI-Toolkit environment ({error.message}): run `kura backend install "
            "ai-toolkit --source DIR` or set KURA_AITK_ENV"
        )
        missing(reason)
    return location


@pytest.fixture(scope="session")
def aitk_checkout(aitk_env: EnvLocation) -> Path:
    """The checkout the environment runs (the one ``run.py`` starts from)."""
    return installed_checkout(aitk_env)


@pytest.fixture(scope="session")
def tiny_sdxl(aitk_env: EnvLocation, tmp_path_factory: pytest.TempPathFactory) -> TinyPipeline:
    """Kura's tiny random SDXL diffusers pipeline, built once with the environment's Python."""
    return build_tiny(aitk_env, tmp_path_factory.mktemp("aitk-tiny") / "sdxl")
