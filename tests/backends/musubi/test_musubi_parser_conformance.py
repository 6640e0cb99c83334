"""Opt-in: the golden argv and TOMLs against Musubi's own parsers and dataset schema.

Set ``KURA_MUSUBI_SRC`` to the ``src`` folder of a Musubi Tuner checkout at the pinned
tag (and ``KURA_MUSUBI_DEPS`` to a folder holding ``voluptuous`` and ``toml`` if the
test interpreter lacks them)::

    git clone --branch v0.3.4 https://github.com/kohya-ss/musubi-tuner /tmp/musubi
    pip install --target /tmp/musubi-deps voluptuous==0.15.2 toml==0.10.2
    KURA_MUSUBI_SRC=/tmp/musubi/src KURA_MUSUBI_DEPS=/tmp/musubi-deps \
        .venv/bin/pytest tests/backends/musubi/test_musubi_parser_conformance.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SOURCE = os.environ.get("KURA_MUSUBI_SRC")


@pytest.mark.skipif(not SOURCE, reason="set KURA_MUSUBI_SRC to a Musubi checkout's src folder")
def test_goldens_parse_with_musubi() -> None:
    completed = subprocess.run(
        [sys.executable, str(HERE / "musubi_parse_harness.py"), str(SOURCE), str(HERE / "golden")],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    results = json.loads(completed.stdout)
    failures = {key: value for key, value in results.items() if value != "ok"}
    assert results, "no golden files were checked"
    assert not failures, failures
