"""The names of the registered backends, as a leaf (stdlib only).

``run.yaml``'s ``backend.name`` is checked against these when the spec is read
(:mod:`kura.schema.run`), and the spec is what the backend seam (:mod:`kura.backends.base`)
takes: were the names read from :mod:`kura.backends.registry`, which hands out ``Backend``
objects, the seam and the spec would import each other. The registry builds on this module.
"""

from __future__ import annotations

import os

__all__ = [
    "BUILTIN_MODULES",
    "PLUGIN_VARIABLE",
    "backend_names",
    "builtin_names",
    "plugin_modules",
    "runtime_names",
]

BUILTIN_MODULES: dict[str, str] = {
    "musubi-tuner": "kura.backends.musubi.backend",
    "ai-toolkit": "kura.backends.aitoolkit.backend",
    "kohakumoss": "kura.backends.kohakumoss.backend",
}
"""backend.name → the module whose ``BACKEND`` is that backend."""

PLUGIN_VARIABLE = "KURA_BACKEND_MODULES"
"""``name=module,name=module``: backends outside Kura, importable by every Kura process (a
detached supervisor too, which inherits the variable)."""

runtime_names: set[str] = set()
"""Names of the backends registered at run time (``registry.registered_backend``: the tests'
fake trainer); the registry keeps the backends themselves."""


def plugin_modules() -> dict[str, str]:
    """The plug-in backends :data:`PLUGIN_VARIABLE` names: backend.name → module."""
    plugins: dict[str, str] = {}
    for entry in os.environ.get(PLUGIN_VARIABLE, "").split(","):
        name, sep, module = entry.strip().partition("=")
        if sep and name and module:
            plugins[name.strip()] = module.strip()
    return plugins


def backend_names() -> tuple[str, ...]:
    """Every backend a run may name: built in, plug-ins, registered at run time."""
    return tuple(sorted({*BUILTIN_MODULES, *plugin_modules(), *runtime_names}))


def builtin_names() -> tuple[str, ...]:
    """The backends Kura ships (no plug-in, no test backend), in registry order."""
    return tuple(sorted(BUILTIN_MODULES))
