"""Files a sample prompt names (a start image, a control image), as a run mounts them.

A trainer opens these files when it samples, so each is an input of the approved run like
any other: in a container it is mounted read-only at ``SAMPLE_INPUTS_DIR/<nn>-<name>`` and
the compiled prompt names that path; on the host the prompt keeps the absolute path. Each
backend finds the paths in its own prompt syntax; the rules for a path are shared here.
"""

from __future__ import annotations

import posixpath
import re

from kura.errors import SpecError

__all__ = ["SAMPLE_INPUTS_DIR", "check_sample_path", "sample_input_target"]

SAMPLE_INPUTS_DIR = "/kura/sample-inputs"


def check_sample_path(index: int, flag: str, path: str, *, in_container: bool) -> None:
    """Refuse a path the run cannot bind: a relative one (the trainer runs in its own
    folder) or, in a container, one holding ``:`` (a bind mount's separator)."""
    where = f"training.sample_prompts[{index}] --{flag} {path!r}"
    if not posixpath.isabs(path):
        raise SpecError(
            f"{where} is not an absolute path: the trainer runs in its own folder, so Kura "
            "binds only absolute paths",
            hint="give the file's absolute path on this machine",
        )
    if in_container and ":" in path:
        raise SpecError(
            f"{where} holds a ':', which a container bind mount cannot carry",
            hint="copy or link the file to a path without ':'",
        )


def sample_input_target(number: int, path: str) -> str:
    """The container path of the ``number``-th sample file (its name kept, made safe)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", posixpath.basename(path)).strip("-.") or "file"
    return posixpath.join(SAMPLE_INPUTS_DIR, f"{number:02d}-{name[:64]}")
