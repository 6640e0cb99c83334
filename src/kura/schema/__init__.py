"""Schemas of the files Kura reads and writes (pydantic), and their loaders."""

from __future__ import annotations

from kura.schema.base import load_spec, set_dotted, validate_spec
from kura.schema.dataset import DatasetSpec
from kura.schema.run import RunSpec

__all__ = ["DatasetSpec", "RunSpec", "load_spec", "set_dotted", "validate_spec"]
