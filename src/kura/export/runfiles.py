"""Where a run's LoRA files, base model and trigger word are.

Musubi writes into ``runs/<id>/output/``: ``<id>-<epoch:06d>.safetensors`` per saved epoch,
``<id>-step<step:08d>.safetensors`` per saved step and ``<id>.safetensors`` for the end of
training (the last epoch, which gets no numbered file). The locked DiT path is
``models.roles.dit.path`` of ``runs/<id>/compiled/run.lock`` (null while pending).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kura.errors import InvalidInput, NotFound, Unsupported
from kura.workspace import Workspace

__all__ = [
    "BaseShapes",
    "LoraFile",
    "base_shapes",
    "choose_source",
    "epoch_series",
    "lora_files",
    "output_dir",
    "trigger_words",
]

LOCK_FILE = ("compiled", "run.lock")


@dataclass(frozen=True)
class LoraFile:
    """One LoRA file Musubi saved for a run."""

    path: Path
    kind: Literal["epoch", "step", "final"]
    number: int | None

    def label(self) -> str:
        if self.kind == "final":
            return "final"
        return f"{self.kind} {self.number}"


@dataclass(frozen=True)
class BaseShapes:
    """Tensor name → shape of the base DiT, and where they were read from."""

    shapes: dict[str, tuple[int, ...]]
    source: str


def output_dir(workspace: Workspace, run_id: str) -> Path:
    return workspace.run_dir(run_id) / "output"


def lora_files(workspace: Workspace, run_id: str) -> list[LoraFile]:
    """The run's saved LoRA files: epochs, then steps (each in order), then the final."""
    folder = output_dir(workspace, run_id)
    pattern = re.compile(rf"^{re.escape(run_id)}(?:-(\d{{6}})|-step(\d{{8}}))?\.safetensors$")
    found: list[LoraFile] = []
    if folder.is_dir():
        for path in folder.iterdir():
            match = pattern.match(path.name)
            if not match or not path.is_file():
                continue
            epoch, step = match.groups()
            if epoch is not None:
                found.append(LoraFile(path, "epoch", int(epoch)))
            elif step is not None:
                found.append(LoraFile(path, "step", int(step)))
            else:
                found.append(LoraFile(path, "final", None))
    order = {"epoch": 0, "step": 1, "final": 2}
    return sorted(found, key=lambda f: (order[f.kind], f.number or 0))


def choose_source(
    workspace: Workspace, run_id: str, epoch: int | None, final_epoch: int | None
) -> LoraFile:
    """The file to export: ``epoch``'s (the final file stands for the last epoch), or the
    final file, or else the latest epoch."""
    files = lora_files(workspace, run_id)
    folder = output_dir(workspace, run_id)
    if not files:
        raise NotFound(
            f"run {run_id} has no LoRA files in {folder}",
            hint="train first (`kura run launch`), or wait for the first saved epoch",
            path=folder,
        )
    epochs = {f.number: f for f in files if f.kind == "epoch"}
    final = next((f for f in files if f.kind == "final"), None)
    if epoch is not None:
        if epoch in epochs:
            return epochs[epoch]
        if final is not None and final_epoch is not None and epoch == final_epoch:
            return LoraFile(final.path, "final", epoch)
        saved = ", ".join(str(n) for n in sorted(n for n in epochs if n is not None))
        raise NotFound(
            f"run {run_id} has no LoRA saved for epoch {epoch}",
            hint=f"saved epochs: {saved or 'none'}" + (" and the final file" if final else ""),
            path=folder,
        )
    if final is not None:
        return LoraFile(final.path, "final", final_epoch)
    if epochs:
        return epochs[max(n for n in epochs if n is not None)]
    return files[-1]


def epoch_series(workspace: Workspace, run_id: str) -> list[LoraFile]:
    """The checkpoints post-hoc EMA averages, oldest first: the saved epochs (or, when the
    run saved none, the saved steps), then the final file."""
    files = lora_files(workspace, run_id)
    epochs = [f for f in files if f.kind == "epoch"]
    series = epochs or [f for f in files if f.kind == "step"]
    return series + [f for f in files if f.kind == "final"]


def base_shapes(workspace: Workspace, run_id: str, bundle_id: str) -> BaseShapes:
    """The base DiT's tensor shapes: from the locked file's header, or — while the lock has
    no DiT path — from the representative layout of the bundle's DiT component."""
    from kura.models.bundles import get_bundle
    from kura.models.header import read_header

    lock = workspace.run_dir(run_id).joinpath(*LOCK_FILE)
    dit_path = _locked_dit(lock) if lock.is_file() else None
    if dit_path is not None:
        path = Path(dit_path)
        if not path.is_file():
            raise NotFound(
                f"the locked DiT {path} is not there",
                hint=f"restore it or recompile the run (`kura run compile {run_id}`)",
                path=path,
            )
        if path.is_dir():
            return _repository_shapes(path)
        header = read_header(path)
        return BaseShapes({k: v.shape for k, v in header.tensors.items()}, f"header of {path}")
    components = get_bundle(bundle_id).file("dit").components
    if not components:
        raise Unsupported(
            f"bundle {bundle_id} names no DiT component layout to verify a LoRA against",
            hint=f"compile the run with its DiT file in place (`kura run compile {run_id}`)",
        )
    from kura.models.layouts import component_layout

    layout = component_layout(components[0])
    return BaseShapes(
        {k: tuple(shape) for k, (_, shape) in layout.items()},
        f"layout of component {components[0]} (DiT not locked yet)",
    )


def _repository_shapes(folder: Path) -> BaseShapes:
    """A diffusers repository snapshot (a bundle role of format ``hf-repo``): the headers of
    its ``transformer/`` shards, together."""
    from kura.models.header import read_header

    shards = sorted((folder / "transformer").glob("*.safetensors"))
    if not shards:
        raise NotFound(
            f"the locked model folder {folder} has no transformer/*.safetensors",
            hint="download the whole repository (`kura model fetch`)",
            path=folder,
        )
    shapes: dict[str, tuple[int, ...]] = {}
    for shard in shards:
        shapes.update({k: v.shape for k, v in read_header(shard).tensors.items()})
    return BaseShapes(shapes, f"headers of {folder}/transformer ({len(shards)} shards)")


def trigger_words(workspace: Workspace, dataset_names: list[str]) -> list[str]:
    """The trigger words the run's datasets declare, in order, without repeats."""
    from kura.dataset.registry import read_dataset

    words: list[str] = []
    for name in dataset_names:
        spec = read_dataset(workspace, name)
        trigger = spec.intent.trigger
        if trigger and trigger not in words:
            words.append(trigger)
    return words


def _locked_dit(lock: Path) -> str | None:
    try:
        doc: Any = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"cannot read {lock}: {exc}", path=lock) from None
    dit = (((doc or {}).get("models") or {}).get("roles") or {}).get("dit") or {}
    path = dit.get("path") if isinstance(dit, dict) else None
    return path if isinstance(path, str) and path else None
