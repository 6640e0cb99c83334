"""Backend test options: ``--update-golden`` (or ``KURA_UPDATE_GOLDEN=1``) rewrites goldens."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the backend golden files instead of comparing against them",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when golden files should be rewritten rather than compared."""
    option = bool(request.config.getoption("--update-golden", default=False))
    return option or os.environ.get("KURA_UPDATE_GOLDEN") == "1"
