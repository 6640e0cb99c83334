"""A run's inputs, loaded once per command and passed down: the spec, its bundle, its
backend and its datasets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kura.runs.store import read_run

if TYPE_CHECKING:
    from kura.backends.base import Backend, DatasetMedia, PlanInputs
    from kura.models.bundles import Bundle
    from kura.spec.dataset import DatasetSpec
    from kura.spec.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["RunContext", "load_context"]


@dataclass(frozen=True)
class RunContext:
    spec: RunSpec
    bundle: Bundle
    backend: Backend
    datasets: Mapping[str, DatasetSpec]
    media: Mapping[str, DatasetMedia] = field(default_factory=dict)

    @property
    def plan_inputs(self) -> PlanInputs:
        from kura.backends.base import PlanInputs

        return PlanInputs(bundle=self.bundle, datasets=self.datasets, media=self.media)


def load_context(workspace: Workspace, run_id: str) -> RunContext:
    """Load run.yaml, its bundle, backend and datasets; refuse an architecture the run's
    backend does not train (naming those that do)."""
    from kura.backends.registry import get_backend, require_serves
    from kura.dataset.registry import read_dataset
    from kura.models.bundles import get_bundle

    spec = read_run(workspace, run_id)
    bundle = get_bundle(spec.model.base)
    backend = get_backend(spec.backend.name)
    require_serves(backend, bundle.architecture)
    from kura.runs.media import dataset_media

    datasets = {use.name: read_dataset(workspace, use.name) for use in spec.datasets}
    media = {use.name: dataset_media(workspace, use.name) for use in spec.datasets}
    return RunContext(spec=spec, bundle=bundle, backend=backend, datasets=datasets, media=media)
