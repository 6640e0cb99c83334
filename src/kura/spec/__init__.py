"""Schemas of the files Kura reads and writes (pydantic), and their loaders."""

from __future__ import annotations

from kura.spec.base import load_spec, set_dotted, validate_spec
from kura.spec.dataset import DatasetSpec
from kura.spec.run import RunSpec

__all__ = ["DatasetSpec", "RunSpec", "load_spec", "set_dotted", "validate_spec"]
