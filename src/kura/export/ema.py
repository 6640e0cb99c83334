"""Post-hoc EMA over a run's saved checkpoints, with the semantics of Musubi's
``lora_post_hoc_ema.py`` (v0.3.4):

- the first file initialises the average; each later file ``i`` (0-based among the later
  ones, ``n`` of them) is folded in as ``avg = avg × β_i + x × (1 − β_i)``;
- ``β_i = β + (β₂ − β) × i / (n − 1)`` (β₂ defaults to β, so a constant decay; with one
  later file, ``β_i = β``);
- floating-point tensors are averaged in float32 and written in their original dtype;
  other tensors are taken from the first file; ``.alpha`` must agree across files;
- metadata comes from the last file (its ``sshs_*`` hashes are dropped: the data changed).

Musubi orders files by modification time unless ``--no_sort``; Kura orders them by epoch
(or step) number, which is the order training wrote them. A run that saves one file per
expert (AI-Toolkit's Wan 2.2 A14B) gets one average per expert. Musubi's runs get
``output/<id>-ema.safetensors``; AI-Toolkit's go to ``export/`` instead, because AI-Toolkit
resumes from the newest ``<name>*.safetensors`` in its output folder
(``jobs/process/BaseSDTrainProcess.py:823`` ``get_latest_save_path``), which an average
written there would become.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kura.errors import CheckFailed, UsageError
from kura.nextsteps import NextStep, next_list
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.export.runfiles import LoraFile

__all__ = ["EmaMerge", "ema_betas", "merge_ema", "merge_ema_files"]

DEFAULT_BETA = 0.95


@dataclass(frozen=True)
class EmaMerge:
    """``kura export merge-ema``: the average of the run's checkpoints (``inputs``, named
    by ``labels``, in training order) written at ``out``, the decay of each merge
    (``betas``, from ``beta`` to ``beta2``), its tensor count and metadata."""

    run: str
    inputs: tuple[str, ...]
    labels: tuple[str, ...]
    beta: float
    beta2: float
    betas: tuple[float, ...]
    out: str
    keys: int
    metadata: Mapping[str, str]
    next: tuple[NextStep, ...] = ()
    expert: str | None = None
    """The expert whose checkpoints were averaged (two-expert models), else None."""
    companions: tuple[EmaMerge, ...] = ()
    """The other experts' averages."""

    kind: ClassVar[str] = "lora-ema"

    def to_dict(self) -> dict[str, object]:
        document = self._own()
        if self.expert is not None:
            document["expert"] = self.expert
            document["companions"] = [c._own() | {"expert": c.expert} for c in self.companions]
        return document | {"next": next_list(*self.next)}

    def _own(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "run": self.run,
            "inputs": list(self.inputs),
            "labels": list(self.labels),
            "beta": self.beta,
            "beta2": self.beta2,
            "betas": list(self.betas),
            "out": self.out,
            "keys": self.keys,
            "metadata": dict(self.metadata),
        }


def ema_betas(count: int, beta: float, beta2: float | None = None) -> list[float]:
    """The decay applied at each of the ``count - 1`` merges of ``count`` files."""
    for name, value in (("beta", beta), ("beta2", beta2)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise UsageError(f"{name} {value} is outside 0-1")
    end = beta if beta2 is None else beta2
    merges = count - 1
    if merges < 1:
        return []
    if merges == 1:
        return [beta]
    return [beta + (end - beta) * (i / (merges - 1)) for i in range(merges)]


def merge_ema_files(
    paths: list[Path], beta: float, beta2: float | None = None
) -> tuple[dict[str, Any], dict[str, str], list[float]]:
    """Average ``paths`` (oldest first); return tensors, metadata and the betas used."""
    import numpy as np

    from kura.export.tensorio import read_tensors

    if len(paths) < 2:
        raise UsageError(
            f"post-hoc EMA needs at least two checkpoints, got {len(paths)}",
            hint="save more often (training.save_every_n_epochs) or wait for more epochs",
        )
    betas = ema_betas(len(paths), beta, beta2)
    first, _ = read_tensors(paths[0])
    dtypes = {k: v.dtype for k, v in first.items()}
    floating = {k for k, v in first.items() if _is_float(v)}
    state = {k: (v.astype(np.float32) if k in floating else v) for k, v in first.items()}
    metadata: dict[str, str] = {}
    for path, decay in zip(paths[1:], betas, strict=True):
        tensors, metadata = read_tensors(path)
        missing = sorted(set(state) - set(tensors))
        extra = sorted(set(tensors) - set(state))
        if missing or extra:
            raise CheckFailed(
                f"{path.name} does not hold the same tensors as {paths[0].name}: "
                f"missing {missing[:4]}, extra {extra[:4]}",
                hint="average only checkpoints of one run with one network setup",
            )
        for key, value in tensors.items():
            if key.endswith(".alpha"):
                if not np.allclose(state[key].astype(np.float32), value.astype(np.float32)):
                    raise CheckFailed(f"alpha {key} differs between checkpoints")
                continue
            if key not in floating:
                continue
            state[key] = state[key] * np.float32(decay) + value.astype(np.float32) * np.float32(
                1.0 - decay
            )
    out = {k: v.astype(dtypes[k]) if k in floating else v for k, v in state.items()}
    return out, metadata, betas


def merge_ema(
    workspace: Workspace, run_id: str, *, beta: float = DEFAULT_BETA, beta2: float | None = None
) -> EmaMerge:
    """Write the run's average (one per expert where the run saves one file per expert);
    return what was merged."""
    from kura.export.runfiles import epoch_series
    from kura.runs.store import read_run

    read_run(workspace, run_id)
    groups = epoch_series(workspace, run_id) or [(None, [])]
    merges = [
        _merge_series(workspace, run_id, expert, series, beta, beta2) for expert, series in groups
    ]
    return replace(merges[0], companions=tuple(merges[1:]))


def _merge_series(
    workspace: Workspace,
    run_id: str,
    expert: str | None,
    series: list[LoraFile],
    beta: float,
    beta2: float | None,
) -> EmaMerge:
    from kura.export.runfiles import output_dir
    from kura.export.tensorio import serialize
    from kura.fsutil import atomic_write_bytes

    paths = [f.path for f in series]
    tensors, metadata, betas = merge_ema_files(paths, beta, beta2)
    for key in ("sshs_model_hash", "sshs_legacy_hash"):
        metadata.pop(key, None)
    metadata.update(
        {
            "kura.run_id": run_id,
            "kura.ema_inputs": json.dumps([p.name for p in paths]),
            "kura.ema_beta": str(beta),
            "kura.ema_beta2": str(beta if beta2 is None else beta2),
            "kura.ema_betas": json.dumps(betas),
        }
    )
    if expert is not None:
        metadata["kura.expert"] = expert
    if any(f.naming == "ai-toolkit" for f in series):
        target = workspace.run_dir(run_id) / "export" / f"{run_id}-ema{_tail(expert)}.safetensors"
    else:
        target = output_dir(workspace, run_id) / f"{run_id}-ema{_tail(expert)}.safetensors"
    atomic_write_bytes(target, serialize(tensors, metadata))
    return EmaMerge(
        run=run_id,
        inputs=tuple(str(p) for p in paths),
        labels=tuple(f.label() for f in series),
        beta=beta,
        beta2=beta if beta2 is None else beta2,
        betas=tuple(betas),
        out=str(target),
        keys=len(tensors),
        metadata=metadata,
        expert=expert,
    )


def _tail(expert: str | None) -> str:
    return "" if expert is None else f"_{expert}"


def _is_float(array: Any) -> bool:
    import numpy as np

    return bool(np.issubdtype(array.dtype, np.floating)) or array.dtype.name in (
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
    )
