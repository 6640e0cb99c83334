"""The files Musubi opens for sample prompts, as inputs of the approved run.

A sample prompt names files with ``--i`` (start image), ``--ei`` (end image), ``--cn``
(control video) and ``--ci`` (control images): ``fpack_train_network.py:110``,
``wan_train_network.py:166``, ``flux_kontext_train_network.py:177`` … open them (the options:
:mod:`kura.backends.musubi.prompts`). A person writes them as paths on this machine, absolute.

In a container (every executor but ``host``, the rule of ``kura.runs.layout.PathMap``) each
file is mounted read-only at ``SAMPLE_INPUTS_DIR/<nn>-<name>`` and the compiled prompt line
names that path; on the host the line keeps the path. Either way every file is a
:class:`Mount` whose host side (``source``) this module sets: ``kura run compile`` locks its
size and digest (``run.lock`` ``inputs``) and the launch gate re-checks it, as it does a
model file, so what the trainer opens is what was approved.
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.backends.musubi.contract import Mount
from kura.backends.musubi.prompts import paths, with_paths
from kura.backends.sample_files import (
    SAMPLE_INPUTS_DIR,
    check_sample_path,
    sample_input_target,
)
from kura.schema.run import RunSpec

__all__ = ["SAMPLE_INPUTS_DIR", "SampleInputs", "sample_inputs"]

"""Where a container sees the sample prompts' files (beside the run's own mounts)."""
PURPOSE = "sample prompt input"


@dataclass(frozen=True)
class SampleInputs:
    """The prompt lines as the trainer reads them, and the files they name as mounts."""

    lines: tuple[str, ...]
    mounts: tuple[Mount, ...]


def sample_inputs(spec: RunSpec) -> SampleInputs:
    """``training.sample_prompts`` with their files mapped to where the step sees them."""
    in_container = spec.execution.executor != "host"
    targets: dict[str, str] = {}
    for index, line in enumerate(spec.training.sample_prompts):
        for flag, path in paths(line):
            check_sample_path(index, flag, path, in_container=in_container)
            if path not in targets:
                targets[path] = sample_input_target(len(targets), path) if in_container else path
    lines = tuple(
        with_paths(line, targets.__getitem__) if paths(line) else line
        for line in spec.training.sample_prompts
    )
    mounts = tuple(
        Mount(target, True, f"{PURPOSE} ({path})", source=path) for path, target in targets.items()
    )
    return SampleInputs(lines, mounts)
