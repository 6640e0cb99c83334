"""Musubi Tuner's environment for the tests that run the trainer's own code.

``musubi_trainer`` is the environment Kura would use (``KURA_MUSUBI_ENV``, else the default
location) with the checkout its ``kura-env.json`` names. Locally, without it, the tests that
need it are skipped with the reason; under CI (``CI=true``) a missing environment fails
them, because ``.ci/run`` installs it before pytest (``kura backend install musubi``).

``musubi_harness`` is the interpreter and Musubi ``src`` folder the opt-in harnesses (parser,
dataset semantics, network modules) run with: the environment's Python and its checkout
when the environment is installed, else ``KURA_MUSUBI_SRC`` with this interpreter (and
``KURA_MUSUBI_DEPS``), as before; neither: skipped, or failed under CI.
"""

from __future__ import annotations

import os
import sys

import pytest
from musubi_trainer_env import Harness, installed_trainer, missing

from kura.backends.musubi.env import HostTrainer, musubi_env
from kura.backends.musubi.tiny import TinyQwenImage, build_tiny
from kura.errors import KuraError


@pytest.fixture(scope="session")
def musubi_trainer() -> HostTrainer:
    try:
        trainer = installed_trainer()
    except KuraError as err:
        pytest.fail(f"the Musubi Tuner environment is broken: {err.message}", pytrace=False)
    if trainer is None:
        missing(
            f"the Musubi Tuner environment is not installed at {musubi_env(None).path}: run "
            "`kura backend install musubi --source DIR` or set KURA_MUSUBI_ENV"
        )
    return trainer


@pytest.fixture(scope="session")
def tiny_qwen(
    musubi_trainer: HostTrainer, tmp_path_factory: pytest.TempPathFactory
) -> TinyQwenImage:
    """The one-block Qwen-Image DiT, the VAE and a header-only text encoder, built once."""
    return build_tiny(musubi_trainer.location, tmp_path_factory.mktemp("musubi-tiny"))


@pytest.fixture(scope="session")
def musubi_harness() -> Harness:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    source = os.environ.get("KURA_MUSUBI_SRC")
    trainer = installed_trainer()
    if trainer is not None:
        env.pop("KURA_MUSUBI_DEPS", None)  # the environment holds every package
        return Harness(str(trainer.location.python), source or str(trainer.checkout / "src"), env)
    if source:
        return Harness(sys.executable, source, env)
    missing(
        "neither the Musubi Tuner environment (`kura backend install musubi`) nor "
        "KURA_MUSUBI_SRC is there to run Musubi's own code"
    )
