"""A compiled run as one JSON document (the golden files of the backend tests).

The step, mount and container are the compiled files' own types (:mod:`kura.schema.compiled`):
``kura run compile`` writes them as they are, so this is the only other form, and it is the
same JSON. Env keys sort, so compiling twice gives the same document.
"""

from __future__ import annotations

from pydantic_core import to_jsonable_python

from kura.backends.base import CompiledRun

__all__ = ["compiled_document"]


def compiled_document(run: CompiledRun) -> dict[str, object]:
    """A compiled run as one document, every value as JSON has it."""
    return {
        "backend": run.backend,
        "release": run.release,
        "files": dict(sorted(run.files.items())),
        "steps": [_sorted_env(to_jsonable_python(s)) for s in run.steps],
        "container": None
        if run.container is None
        else _sorted_env(to_jsonable_python(run.container)),
        "warnings": list(run.warnings),
        "escape_hatch": run.escape_hatch,
    }


def _sorted_env(document: dict[str, object]) -> dict[str, object]:
    env = document["env"]
    assert isinstance(env, dict)
    return {**document, "env": dict(sorted(env.items()))}
