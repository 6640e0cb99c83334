"""The Musubi Tuner backend: an adapter table (data) and a pure compiler.

``compile_run(spec, inputs)`` turns a ``RunSpec`` plus resolved inputs into the dataset
TOML, the cache and train argv lists and the container spec Musubi Tuner
``MUSUBI_RELEASE`` accepts. ``ADAPTERS`` holds one record per Kura architecture.
"""

from __future__ import annotations

from kura.backends.musubi.adapters import ADAPTERS, MUSUBI_RELEASE, MUSUBI_TAG, adapter_for
from kura.backends.musubi.compile import KNOWN_ROLES, compile_run
from kura.backends.musubi.container import DEFAULT_IMAGE
from kura.backends.musubi.contract import (
    CompiledRun,
    CompileInputs,
    ContainerSpec,
    DatasetInput,
    Mount,
    Step,
)

__all__ = [
    "ADAPTERS",
    "DEFAULT_IMAGE",
    "KNOWN_ROLES",
    "MUSUBI_RELEASE",
    "MUSUBI_TAG",
    "CompileInputs",
    "CompiledRun",
    "ContainerSpec",
    "DatasetInput",
    "Mount",
    "Step",
    "adapter_for",
    "compile_run",
]
