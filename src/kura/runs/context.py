"""A run's inputs, loaded once per command and passed down: the spec, its bundle, its
backend and its datasets, made from one :class:`~kura.runs.snapshot.RunSnapshot`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kura.backends.base import Backend, DatasetMedia, PlanInputs
    from kura.models.bundles import Bundle
    from kura.runs.snapshot import RunSnapshot
    from kura.schema.dataset import DatasetSpec
    from kura.schema.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["RunContext", "context_of", "load_context"]


@dataclass(frozen=True)
class RunContext:
    spec: RunSpec
    bundle: Bundle
    backend: Backend
    datasets: Mapping[str, DatasetSpec]
    snapshot: RunSnapshot
    """The files the context was made from, for the stages after it (compile, the plan)."""
    media: Mapping[str, DatasetMedia] = field(default_factory=dict)

    @property
    def plan_inputs(self) -> PlanInputs:
        from kura.backends.base import PlanInputs

        return PlanInputs(bundle=self.bundle, datasets=self.datasets, media=self.media)


def load_context(workspace: Workspace, run_id: str) -> RunContext:
    """Load run.yaml, its bundle, backend and datasets; refuse an architecture the run's
    backend does not train (naming those that do)."""
    from kura.runs.snapshot import take_snapshot

    return context_of(take_snapshot(workspace, run_id))


def context_of(snapshot: RunSnapshot) -> RunContext:
    """The context of a run as ``snapshot`` read it (no file is read again)."""
    from kura.backends.registry import get_backend, require_serves
    from kura.models.bundles import get_bundle
    from kura.runs.media import media_of

    spec = snapshot.spec
    bundle = get_bundle(spec.model.base)
    backend = get_backend(spec.backend.name)
    require_serves(backend, bundle.architecture)
    names = [use.name for use in spec.datasets]
    datasets = {name: snapshot.datasets[name].spec for name in names}
    media = {name: media_of(snapshot.datasets[name].inspection()) for name in names}
    return RunContext(
        spec=spec,
        bundle=bundle,
        backend=backend,
        datasets=datasets,
        media=media,
        snapshot=snapshot,
    )
