"""Trainer backends: each turns a checked run spec into the exact files and commands its
trainer accepts. Musubi Tuner is the first (``kura.backends.musubi``)."""

from __future__ import annotations
