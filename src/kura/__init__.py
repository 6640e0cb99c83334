"""Kura: a workspace for planning, launching and following LoRA training runs."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
