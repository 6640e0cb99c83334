"""Schemas of the files Kura reads and writes (pydantic), and their loaders.

The names below load on first use: a process that needs one file's schema (the detached
supervisor reads launch.json) does not build the run and dataset models or import the YAML
parsers at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kura.schema.base import load_spec, set_dotted, validate_spec
    from kura.schema.dataset import DatasetSpec
    from kura.schema.run import RunSpec

__all__ = ["DatasetSpec", "RunSpec", "load_spec", "set_dotted", "validate_spec"]

_HOMES = {
    "DatasetSpec": "kura.schema.dataset",
    "RunSpec": "kura.schema.run",
    "load_spec": "kura.schema.base",
    "set_dotted": "kura.schema.base",
    "validate_spec": "kura.schema.base",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kura.schema' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
