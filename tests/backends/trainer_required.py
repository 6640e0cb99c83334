"""The one rule for tests that need a trainer's environment: skip without it, but fail
under CI (``CI=true``, where ``.ci/run`` installs every environment)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(reason: str) -> NoReturn:
    """Skip with ``reason``, or under ``CI=true`` fail with it."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)
