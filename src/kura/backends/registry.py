"""The registered backends, chosen by run.yaml's ``backend.name``.

Each backend is named here with the module that holds it, and imported only when a command
needs it: listing names costs nothing, and no trainer package loads at CLI start-up. A
backend never swaps for another: asking one for an architecture it does not train is an
error that names the backends that do.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kura.backends.names import (
    BUILTIN_MODULES,
    backend_names,
    builtin_names,
    plugin_modules,
    runtime_names,
)
from kura.errors import SpecError

if TYPE_CHECKING:
    from kura.backends.base import Backend
    from kura.models.bundles import Bundle

__all__ = [
    "backend_names",
    "backends_serving",
    "builtin_names",
    "command_backend",
    "get_backend",
    "registered_backend",
    "require_accepts",
    "require_serves",
]

ALIASES: dict[str, str] = {"musubi": "musubi-tuner"}
"""Shorter spellings commands accept for a backend (``kura doctor musubi``, ``kura image build
musubi``); run.yaml's ``backend.name`` takes the registered name only."""

_EXTRA: dict[str, Backend] = {}
"""Backends registered at run time (the tests' fake trainer); their names are in
:data:`kura.backends.names.runtime_names`."""


def get_backend(name: str) -> Backend:
    """The backend called ``name``; an unknown name lists the registered ones."""
    if name in _EXTRA:
        return _EXTRA[name]
    module = BUILTIN_MODULES.get(name) or plugin_modules().get(name)
    if module is None:
        raise SpecError(
            f"unknown backend {name!r}",
            hint=f"registered backends: {', '.join(backend_names())}",
        )
    backend: Backend = importlib.import_module(module).BACKEND
    return backend


def command_backend(name: str) -> Backend:
    """The backend a command argument names: a registered name or one of its ``ALIASES``."""
    return get_backend(ALIASES.get(name, name))


def backends_serving(architecture: str) -> tuple[str, ...]:
    """The names of the backends that train ``architecture``."""
    return tuple(name for name in backend_names() if get_backend(name).serves(architecture))


def require_serves(backend: Backend, architecture: str) -> None:
    """Refuse an architecture the chosen backend does not train, naming those that do."""
    if backend.serves(architecture):
        return
    others = [name for name in backends_serving(architecture) if name != backend.name]
    raise SpecError(
        f"backend {backend.name} does not train {architecture}",
        hint=(
            f"set backend.name to {' or '.join(others)} in run.yaml (Kura never switches "
            "trainers for you)"
            if others
            else "no registered backend trains it"
        ),
    )


def require_accepts(backend: Backend, bundle: Bundle) -> None:
    """Refuse a bundle laid out for another trainer (the backend trains none of its tasks
    on it), naming the chosen backend's bundle closest to it by id (``aitk-qwen-image`` →
    ``qwen-image``) and every bundle it accepts for the architecture."""
    if backend.tasks(bundle):
        return
    from kura.models.bundles import list_bundles

    accepted = [
        other.id
        for other in list_bundles()
        if other.architecture == bundle.architecture and backend.tasks(other)
    ]
    closest = difflib.get_close_matches(bundle.id, accepted, n=1, cutoff=0.0)
    raise SpecError(
        f"backend {backend.name} does not train on bundle {bundle.id}: its model files are "
        f"laid out for another trainer",
        hint=(
            f"set model.base to {closest[0]} ({backend.name}'s bundle closest to it; it "
            f"accepts {', '.join(accepted)} for {bundle.architecture})"
            if closest
            else f"{backend.name} accepts no bundle of {bundle.architecture}"
        ),
    )


@contextmanager
def registered_backend(backend: Backend) -> Iterator[Backend]:
    """Register ``backend`` for the duration of a ``with`` block (the tests' seam)."""
    _EXTRA[backend.name] = backend
    runtime_names.add(backend.name)
    try:
        yield backend
    finally:
        _EXTRA.pop(backend.name, None)
        runtime_names.discard(backend.name)
