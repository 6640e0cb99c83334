"""The golden argv and TOMLs against Musubi's own parsers and dataset schema.

Runs with Musubi's environment when it is installed (``kura backend install musubi``; see
``conftest.musubi_harness``: CI runs it on every change). Otherwise opt-in: set
``KURA_MUSUBI_SRC`` to the ``src`` folder of a Musubi Tuner checkout at the pinned tag (and
``KURA_MUSUBI_DEPS`` to a folder holding ``voluptuous`` and ``toml`` if the test
interpreter lacks them)::

    git clone --branch v0.3.4 https://github.com/kohya-ss/musubi-tuner /tmp/musubi
    pip install --target /tmp/musubi-deps voluptuous==0.15.2 toml==0.10.2
    KURA_MUSUBI_SRC=/tmp/musubi/src KURA_MUSUBI_DEPS=/tmp/musubi-deps \
        .venv/bin/pytest tests/backends/musubi/test_musubi_parser_conformance.py
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from musubi_trainer_env import Harness

HERE = Path(__file__).parent


def test_goldens_parse_with_musubi(musubi_harness: Harness) -> None:
    h = musubi_harness
    completed = subprocess.run(
        [h.python, str(HERE / "musubi_parse_harness.py"), h.source, str(HERE / "golden")],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        env=h.env,
    )
    results = json.loads(completed.stdout)
    failures = {key: value for key, value in results.items() if value != "ok"}
    assert results, "no golden files were checked"
    assert not failures, failures
