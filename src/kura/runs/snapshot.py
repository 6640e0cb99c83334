"""One snapshot of a run's inputs per command, passed forward instead of read again.

``kura run plan`` (and approve, and compile) reads run.yaml, each dataset's dataset.yaml and
inspection.json once, under the workspace lock, into a :class:`RunSnapshot`; every later
stage (validation, sizing, the fit ladder, estimate, compile, the plan record) takes that
snapshot. A stage that changes an input returns the snapshot after its change (the ladder
writes run.yaml and returns the snapshot of the text it wrote), so nothing downstream sees
a file saved by someone else mid-command, and the plan and its compiled files come from
the same run.yaml, whose digest plan.json records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kura.runs.store import RUN_FILE, check_run_id, existing_run_file

if TYPE_CHECKING:
    from kura.dataset.registry import DatasetSnapshot
    from kura.schema.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["RunSnapshot", "read_run_text", "take_snapshot", "text_digest"]


@dataclass(frozen=True)
class RunSnapshot:
    """run.yaml's text and spec, and each dataset the run reads (training and validation)."""

    run_id: str
    text: str
    spec: RunSpec
    datasets: Mapping[str, DatasetSnapshot]

    @property
    def digest(self) -> str:
        """``sha256:`` of run.yaml's bytes as this snapshot read (or wrote) them."""
        return text_digest(self.text)

    @property
    def source(self) -> str:
        return f"runs/{self.run_id}/{RUN_FILE}"

    def document(self) -> Any:
        """run.yaml's round-trip document (comments and order kept), parsed from the text
        read, for a stage that edits it."""
        from kura.yamlio import parse_yaml

        return parse_yaml(self.text, source=self.source)

    def data(self) -> dict[str, Any]:
        """run.yaml as plain data (the read-only loader), for a stage that only checks it."""
        from kura.plainyaml import parse_plain_yaml

        return parse_plain_yaml(self.text, source=self.source)

    def with_run_text(self, text: str) -> RunSnapshot:
        """The snapshot after run.yaml became ``text`` (a stage wrote it)."""
        return replace(self, text=text, spec=_parse_run(text, self.run_id, self.source))

    def with_dataset(self, dataset: DatasetSnapshot) -> RunSnapshot:
        return replace(self, datasets={**self.datasets, dataset.name: dataset})


def take_snapshot(workspace: Workspace, run_id: str) -> RunSnapshot:
    """Read run.yaml and each of its datasets once (hold the workspace lock around it and
    the stages that use it, so no Kura writer changes them meanwhile)."""
    from kura.dataset.registry import read_dataset_snapshot

    text, spec = read_run_text(workspace, run_id)
    names = dict.fromkeys(use.name for use in [*spec.datasets, *spec.validation])
    datasets = {name: read_dataset_snapshot(workspace, name) for name in names}
    return RunSnapshot(run_id=run_id, text=text, spec=spec, datasets=datasets)


def read_run_text(workspace: Workspace, run_id: str) -> tuple[str, RunSpec]:
    """run.yaml's text and its validated spec, from one open of the file."""
    from kura.bounded import decode_utf8, read_limited
    from kura.yamlio import MAX_YAML_BYTES

    path = existing_run_file(workspace, run_id)
    text = decode_utf8(read_limited(path, limit=MAX_YAML_BYTES, what="YAML file"), path)
    return text, _parse_run(text, run_id, str(path))


def text_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _parse_run(text: str, run_id: str, source: str) -> RunSpec:
    from kura.plainyaml import parse_plain_yaml
    from kura.schema.base import validate_spec
    from kura.schema.run import RunSpec

    spec = validate_spec(RunSpec, parse_plain_yaml(text, source=source), source=source)
    check_run_id(spec, run_id, source)
    return spec
