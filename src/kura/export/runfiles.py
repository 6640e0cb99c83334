"""Where a run's LoRA files, base model and trigger word are.

Musubi writes into ``runs/<id>/output/``: ``<id>-<epoch:06d>.safetensors`` per saved epoch,
``<id>-step<step:08d>.safetensors`` per saved step and ``<id>.safetensors`` for the end of
training (the last epoch, which gets no numbered file).

AI-Toolkit writes ``<id>_<step:09d>.safetensors`` per saved step and ``<id>.safetensors`` at
the end (``jobs/process/BaseSDTrainProcess.py:516-523`` ``save``); Wan 2.2 A14B splits each save
into one file per expert, ``…_high_noise.safetensors`` and ``…_low_noise.safetensors``
(``extensions_built_in/diffusion_models/wan22/wan22_14b_model.py:480-493``), each keyed
like a single Wan LoRA (``.transformer_1.``/``.transformer_2.`` dropped, ``:471-478``).
The two naming schemes cannot collide (``-`` against ``_``). ``tests/backends/aitoolkit/
test_aitk_outputs_trainer.py`` reads files written by AI-Toolkit's own ``save_lora``.

The locked DiT path is ``models.roles.dit.path`` of ``runs/<id>/compiled/run.lock`` (null
while pending). A diffusers repository (AI-Toolkit's bundles) holds the high-noise expert
in ``transformer/`` and the low-noise one in ``transformer_2/`` (``wan22_14b_model.py:437``
``save_model`` writes ``transformer_1`` and ``transformer_2`` there; ``transformer_1`` serves
the high-noise steps, ``:194``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from kura.errors import InvalidInput, NotFound, Unsupported
from kura.workspace import Workspace

__all__ = [
    "EXPERTS",
    "BaseShapes",
    "LoraFile",
    "base_shapes",
    "choose_save",
    "epoch_series",
    "lora_files",
    "output_dir",
    "trigger_words",
]

LOCK_FILE = ("compiled", "run.lock")

Expert = Literal["high_noise", "low_noise"]
EXPERTS: tuple[Expert, ...] = ("high_noise", "low_noise")
EXPERT_FOLDERS: dict[Expert, str] = {"high_noise": "transformer", "low_noise": "transformer_2"}
"""The diffusers sub-folder holding each Wan 2.2 A14B expert (see the module docstring)."""


@dataclass(frozen=True)
class LoraFile:
    """One LoRA file a trainer saved for a run: which save (``kind``, ``number``), and for
    a two-expert model which expert it holds. ``naming`` is the trainer's file scheme."""

    path: Path
    kind: Literal["epoch", "step", "final"]
    number: int | None
    expert: Expert | None = None
    naming: Literal["musubi", "ai-toolkit"] = "musubi"

    def label(self) -> str:
        save = "final" if self.kind == "final" else f"{self.kind} {self.number}"
        return save if self.expert is None else f"{save} ({self.expert.replace('_', '-')})"


@dataclass(frozen=True)
class BaseShapes:
    """Tensor name → shape of the base DiT, and where they were read from."""

    shapes: dict[str, tuple[int, ...]]
    source: str


def output_dir(workspace: Workspace, run_id: str) -> Path:
    return workspace.run_dir(run_id) / "output"


def lora_files(workspace: Workspace, run_id: str) -> list[LoraFile]:
    """The run's saved LoRA files: epochs, then steps (each in order), then the final; the
    experts of one save high-noise first."""
    return saved_loras(output_dir(workspace, run_id), run_id)


def saved_loras(folder: Path, name: str) -> list[LoraFile]:
    """The LoRA files named for ``name`` in ``folder``, in either trainer's scheme."""
    musubi = re.compile(rf"^{re.escape(name)}(?:-(\d{{6}})|-step(\d{{8}}))?\.safetensors$")
    aitk = re.compile(
        rf"^{re.escape(name)}(?:_(\d{{9}}))?(?:_(high_noise|low_noise))?\.safetensors$"
    )
    found: list[LoraFile] = []
    if folder.is_dir():
        for path in folder.iterdir():
            if not path.is_file():
                continue
            match = musubi.match(path.name)
            if match:
                epoch, step = match.groups()
                if epoch is not None:
                    found.append(LoraFile(path, "epoch", int(epoch)))
                elif step is not None:
                    found.append(LoraFile(path, "step", int(step)))
                else:
                    found.append(LoraFile(path, "final", None))
                continue
            match = aitk.match(path.name)
            if match and (match.group(1) or match.group(2)):
                step_text, expert = match.groups()
                found.append(
                    LoraFile(
                        path,
                        "step" if step_text else "final",
                        int(step_text) if step_text else None,
                        expert,  # type: ignore[arg-type]
                        "ai-toolkit",
                    )
                )
    order = {"epoch": 0, "step": 1, "final": 2}
    return sorted(
        found,
        key=lambda f: (order[f.kind], f.number or 0, EXPERTS.index(f.expert) if f.expert else -1),
    )


def choose_save(
    workspace: Workspace, run_id: str, epoch: int | None, final_epoch: int | None
) -> tuple[LoraFile, ...]:
    """The save to export: ``epoch``'s (the final file stands for the last epoch), or the
    final save, or else the latest epoch, or else the latest step. One file, or one per
    expert (high-noise first) where the trainer split the save."""
    files = lora_files(workspace, run_id)
    folder = output_dir(workspace, run_id)
    if not files:
        raise NotFound(
            f"run {run_id} has no LoRA files in {folder}",
            hint="train first (`kura run launch`), or wait for the first saved epoch",
            path=folder,
        )
    saves: dict[tuple[str, int | None], list[LoraFile]] = {}
    for found in files:
        saves.setdefault((found.kind, found.number), []).append(found)
    epochs = {n: group for (kind, n), group in saves.items() if kind == "epoch"}
    final = saves.get(("final", None))
    if epoch is not None:
        if epoch in epochs:
            return tuple(epochs[epoch])
        if final is not None and final_epoch is not None and epoch == final_epoch:
            return tuple(replace(f, number=epoch) for f in final)
        saved = ", ".join(str(n) for n in sorted(n for n in epochs if n is not None))
        raise NotFound(
            f"run {run_id} has no LoRA saved for epoch {epoch}",
            hint=f"saved epochs: {saved or 'none'}" + (" and the final file" if final else ""),
            path=folder,
        )
    if final is not None:
        return tuple(replace(f, number=final_epoch) for f in final)
    if epochs:
        return tuple(epochs[max(n for n in epochs if n is not None)])
    return tuple(saves[max(saves, key=lambda key: key[1] or 0)])


def epoch_series(workspace: Workspace, run_id: str) -> list[tuple[Expert | None, list[LoraFile]]]:
    """The checkpoints post-hoc EMA averages, oldest first, per expert (one series, expert
    None, for a single LoRA): the saved epochs (or, when the run saved none, the saved
    steps), then the final file."""
    files = lora_files(workspace, run_id)
    experts = sorted({f.expert for f in files}, key=lambda e: EXPERTS.index(e) if e else -1)
    out: list[tuple[Expert | None, list[LoraFile]]] = []
    for expert in experts:
        own = [f for f in files if f.expert == expert]
        epochs = [f for f in own if f.kind == "epoch"]
        series = epochs or [f for f in own if f.kind == "step"]
        out.append((expert, series + [f for f in own if f.kind == "final"]))
    return out


def base_shapes(
    workspace: Workspace, run_id: str, bundle_id: str, expert: Expert | None = None
) -> BaseShapes:
    """The base DiT's tensor shapes (for ``expert``'s transformer, of a two-expert model):
    from the locked file's header or diffusers folder, or — while the lock has no DiT
    path — from the representative layout of the bundle's DiT component."""
    from kura.models.bundles import get_bundle
    from kura.models.header import read_header

    lock = workspace.run_dir(run_id).joinpath(*LOCK_FILE)
    dit_path = _locked_dit(lock) if lock.is_file() else None
    architecture = get_bundle(bundle_id).architecture
    if dit_path is not None:
        path = Path(dit_path)
        if not path.exists():
            raise NotFound(
                f"the locked DiT {path} is not there",
                hint=f"restore it or recompile the run (`kura run compile {run_id}`)",
                path=path,
            )
        if path.is_dir():
            folder = EXPERT_FOLDERS[expert] if expert is not None else "transformer"
            return _repository_shapes(path, folder, architecture)
        if expert is not None:
            raise Unsupported(
                f"run {run_id}'s lock names one DiT file ({path}), and its LoRA holds the "
                f"{expert} expert of a two-expert model",
                hint="lock the model's diffusers folder (both transformers) and compile again",
                path=path,
            )
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


def _repository_shapes(folder: Path, sub: str, architecture: str) -> BaseShapes:
    """A diffusers repository snapshot (a bundle role of format ``hf-repo``): the headers of
    its ``sub/`` shards (``transformer/``, or an expert's), together; a Wan transformer's
    block names in the native names its LoRA files use (:mod:`kura.export.wannames`)."""
    from kura.export.wannames import native_wan_shapes
    from kura.models.header import read_header

    shards = sorted((folder / sub).glob("*.safetensors"))
    if not shards:
        raise NotFound(
            f"the locked model folder {folder} has no {sub}/*.safetensors",
            hint="download the whole repository (`kura model fetch`)",
            path=folder,
        )
    shapes: dict[str, tuple[int, ...]] = {}
    for shard in shards:
        shapes.update({k: v.shape for k, v in read_header(shard).tensors.items()})
    where = f"headers of {folder}/{sub} ({len(shards)} shards)"
    if architecture == "wan":
        return BaseShapes(native_wan_shapes(shapes), where + ", in native Wan names")
    return BaseShapes(shapes, where)


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
