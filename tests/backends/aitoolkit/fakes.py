"""Stand-ins for an AI-Toolkit environment and checkout, for the tests that need their shape
and not the real trainer: an environment whose ``bin/python`` runs this test Python, with
the record ``kura backend install`` writes; a checkout with the marker and version file, and
(for the doctor) a ``torch`` and a ``toolkit.extension`` of the test's choosing."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from kura.backends.aitoolkit.env import env_record
from kura.backends.trainer_env import EnvLocation, write_env_record

__all__ = ["fake_checkout", "fake_env"]


def fake_env(path: Path, checkout: Path | None, *, python: str | None = None) -> Path:
    """An environment folder whose Python is ``python`` (default: this one), recorded as
    installed for ``checkout`` (no record when None)."""
    bin_dir = path / "bin"
    bin_dir.mkdir(parents=True)
    wrapper = bin_dir / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{python or sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    if checkout is not None:
        write_env_record(EnvLocation(path, "test"), env_record(checkout.resolve()))
    return path


def fake_checkout(
    path: Path,
    *,
    version: str = "0.12.26",
    torch: str | None = '__version__ = "2.14.1+cu130"\n',
    extension: str = "def get_all_extensions():\n    return []\n",
) -> Path:
    """A checkout: ``run.py``, ``version.py``, a ``torch`` package (None: no torch, so the
    import fails) and ``toolkit/extension.py`` with the given source."""
    path.mkdir(parents=True)
    (path / "run.py").write_text("raise SystemExit('not the real run.py')\n")
    (path / "version.py").write_text(f'VERSION = "{version}"\n')
    if torch is not None:
        (path / "torch").mkdir()
        cuda = "class cuda:\n    @staticmethod\n    def is_available():\n        return False\n"
        (path / "torch" / "__init__.py").write_text(torch + cuda)
    (path / "toolkit").mkdir()
    (path / "toolkit" / "__init__.py").write_text("")
    (path / "toolkit" / "extension.py").write_text(textwrap.dedent(extension))
    return path
