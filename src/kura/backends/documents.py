"""The JSON form of the seam's compiled values (``compiled/steps.json``, ``container.json``).

One writer per document; the readers are in ``kura.execution.launch_spec`` (launch.json) and
``kura.runs.launching`` (the compiled files). Keys sort, so compiling twice gives the same
bytes.
"""

from __future__ import annotations

from kura.backends.base import CompiledRun, ContainerSpec, Mount, Step
from kura.spec.compiled import StepsFile

__all__ = [
    "compiled_document",
    "container_document",
    "mount_document",
    "step_document",
    "steps_file",
]


def step_document(step: Step) -> dict[str, object]:
    return {
        "name": step.name,
        "kind": step.kind,
        "argv": list(step.argv),
        "env": dict(sorted(step.env.items())),
        "cwd": step.cwd,
        "generated": step.generated,
    }


def mount_document(mount: Mount) -> dict[str, object]:
    return {
        "target": mount.target,
        "read_only": mount.read_only,
        "purpose": mount.purpose,
        "baked": mount.baked,
        "source": mount.source,
    }


def container_document(container: ContainerSpec) -> dict[str, object]:
    return {
        "image": container.image,
        "gpus": container.gpus,
        "workdir": container.workdir,
        "mounts": [mount_document(m) for m in container.mounts],
        "env": dict(sorted(container.env.items())),
    }


def compiled_document(run: CompiledRun) -> dict[str, object]:
    """A compiled run as one document (the golden files of the backend tests)."""
    return {
        "backend": run.backend,
        "release": run.release,
        "files": dict(sorted(run.files.items())),
        "steps": [step_document(s) for s in run.steps],
        "container": None if run.container is None else container_document(run.container),
        "warnings": list(run.warnings),
        "escape_hatch": run.escape_hatch,
    }


def steps_file(run: CompiledRun) -> StepsFile:
    """``compiled/steps.json`` of a compiled run."""
    return StepsFile.model_validate(
        {
            "backend": run.backend,
            "release": run.release,
            "steps": [step_document(s) for s in run.steps],
        }
    )
