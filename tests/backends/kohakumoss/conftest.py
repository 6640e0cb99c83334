"""The KohakuMoss environment for the tests that need it.

Tests that drive the real trainer use ``moss_env``: the environment Kura would use
(``KURA_KOHAKUMOSS_ENV``, else the default location). Locally, without it, they are skipped
with the reason; under CI (``CI=true``) a missing environment fails them, because
``.ci/run`` installs it before pytest.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.backends.trainer_required import missing

from kura.backends.kohakumoss.env import EnvLocation, locate_env


@pytest.fixture(scope="session")
def moss_env() -> EnvLocation:
    location = locate_env()
    if not location.present:
        reason = (
            f"the KohakuMoss environment is not installed at {location.path}: run "
            "`kura backend install kohakumoss` or set KURA_KOHAKUMOSS_ENV"
        )
        missing(reason)
    return location


@pytest.fixture(scope="session")
def tiny_root(moss_env: EnvLocation, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random MOSS-shaped pipeline root built by KohakuMoss's own builder."""
    from kura.backends.kohakumoss.queries import build_tiny

    return build_tiny(moss_env, tmp_path_factory.mktemp("moss-tiny") / "weights", single_file=True)
