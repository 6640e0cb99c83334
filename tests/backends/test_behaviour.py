"""The behaviour suite (:mod:`tests.backends.behaviour`) over every registered backend and
the toy trainer: one class of tests, the same for every trainer."""

from __future__ import annotations

import os

import pytest
from tests.backends.behaviour import BackendBehaviour

from kura.backends.base import Backend
from kura.backends.registry import builtin_names, get_backend

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOY = "toy-trainer"


@pytest.fixture(params=[*builtin_names(), TOY])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Backend:
    """Each backend Kura ships, then the toy (registered as a plug-in, as its tests do)."""
    monkeypatch.setenv("KURA_BACKEND_MODULES", f"{TOY}=tests.backends.toy.backend")
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    return get_backend(str(request.param))


class TestEveryBackend(BackendBehaviour):
    """Every test of the suite, once per backend."""
