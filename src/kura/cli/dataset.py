"""Placeholder registration, replaced as the dataset commands land."""

from __future__ import annotations

import click

__all__ = ["register"]


def register(group: click.Group) -> None:
    return None
