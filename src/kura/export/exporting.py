"""``kura export RUN``: one of a run's LoRA files, in the layout its target loads.

The source is converted (or copied, where Musubi's layout already loads), the result is
verified against the base model's real module names — every key maps, shapes agree — and
only then written, atomically. Metadata is kept and extended with the run's bundle,
trigger word and recipe; ``sshs_*`` hashes are dropped when the tensors changed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import LoraExport
from kura.errors import CheckFailed, UsageError
from kura.export.formats import FORMATS
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.export.runfiles import LoraFile
    from kura.schema.run import RunSpec

__all__ = ["export_file", "export_metadata", "export_recipe", "export_run"]

HASH_KEYS = ("sshs_model_hash", "sshs_legacy_hash")


def export_run(
    workspace: Workspace,
    run_id: str,
    *,
    epoch: int | None = None,
    fmt: str = "comfyui",
    out: Path | None = None,
) -> LoraExport:
    """Export one save of ``run_id``: the file written, and how it was verified. A save
    split per expert (Wan 2.2 A14B) writes one file per expert, each checked against its
    own transformer; the high-noise one is the result, the others its ``companions``."""
    from kura.export.runfiles import choose_save
    from kura.runs.store import read_run

    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r}", hint=f"choose {', '.join(FORMATS)}")
    spec = read_run(workspace, run_id)
    files = choose_save(workspace, run_id, epoch, spec.training.epochs)
    if out is not None and len(files) > 1 and not Path(out).is_dir():
        raise UsageError(
            f"run {run_id} saved one LoRA per expert ({', '.join(str(f.expert) for f in files)}): "
            f"--out {out} names one file",
            hint="give --out a folder (each file keeps its expert in its name), or leave it out",
        )
    exported = [export_file(workspace, spec, source, fmt=fmt, out=out) for source in files]
    return replace(exported[0], companions=tuple(exported[1:]))


def export_file(
    workspace: Workspace, spec: RunSpec, source: LoraFile, *, fmt: str, out: Path | None
) -> LoraExport:
    """Convert (or copy) one saved LoRA file, verify it against the base model (its own
    expert's transformer, where the save is split), then write it."""
    from kura.backends.registry import get_backend
    from kura.export.convert import convert_lora, to_musubi
    from kura.export.layout import base_modules
    from kura.export.runfiles import base_shapes, trigger_words
    from kura.export.tensorio import read_tensors, serialize
    from kura.export.verify import target_layout, verify_lora
    from kura.fsutil import atomic_write_bytes
    from kura.models.bundles import get_bundle

    run_id = spec.id
    bundle = get_bundle(spec.model.base)
    architecture = bundle.architecture
    base = base_shapes(workspace, run_id, bundle.id, source.expert)
    modules = base_modules(base.shapes, architecture)
    style, layout = target_layout(architecture, fmt, modules)
    tensors, metadata = read_tensors(source.path)
    written_in = get_backend(spec.backend.name).lora_layout(tuple(tensors), architecture)
    if written_in != "musubi":
        # the trainer wrote another layout: read it back into the one export starts from,
        # resolved against the base model's modules (an unknown root is refused by name)
        try:
            tensors = to_musubi(tensors, architecture, written_in, modules)
        except CheckFailed as problem:
            named = CheckFailed(
                f"{source.path.name} does not fit {bundle.id} ({base.source}): {problem.message}",
                hint=problem.hint,
            )
            named.unmapped = getattr(problem, "unmapped", [])  # type: ignore[attr-defined]
            raise named from None
    conversion = convert_lora(tensors, architecture, fmt, modules)
    report = verify_lora(conversion.tensors, style, layout)
    if not report.ok:
        problems = report.unmapped + report.mismatches
        error = CheckFailed(
            f"the exported LoRA {source.path.name} does not fit {bundle.id} ({base.source}): "
            + "; ".join(problems[:6])
            + (f" (+{len(problems) - 6} more)" if len(problems) > 6 else ""),
            hint="nothing was written; check that the run's base bundle is the model trained",
        )
        error.unmapped = report.unmapped  # type: ignore[attr-defined]
        raise error
    epoch_number = source.number if source.kind != "step" else None
    datasets = [d.name for d in spec.datasets]
    new_metadata = export_metadata(
        metadata,
        run_id=run_id,
        bundle_id=bundle.id,
        architecture=architecture,
        fmt=fmt,
        source=source.path.name,
        epoch=epoch_number,
        triggers=trigger_words(workspace, datasets),
        recipe=export_recipe(spec, datasets),
        copied=conversion.copied,
    )
    if source.expert is not None:
        new_metadata["kura.expert"] = source.expert
    target = _out_path(workspace, run_id, source.path.stem, fmt, out)
    if target.resolve() == source.path.resolve():
        raise UsageError(
            f"--out {target} is the source file itself", hint="name another file to write"
        )
    atomic_write_bytes(target, serialize(conversion.tensors, new_metadata))
    return LoraExport(
        run=run_id,
        epoch=epoch_number,
        step=source.number if source.kind == "step" else None,
        format=fmt,
        architecture=architecture,
        source=str(source.path),
        out=str(target),
        copied=conversion.copied,
        mode=conversion.mode,
        why=conversion.source,
        verified_against=base.source,
        keys=report.keys,
        modules=report.modules,
        unmapped=tuple(report.unmapped),
        metadata=new_metadata,
        expert=source.expert,
    )


def export_metadata(
    metadata: dict[str, str],
    *,
    run_id: str,
    bundle_id: str,
    architecture: str,
    fmt: str,
    source: str,
    epoch: int | None,
    triggers: list[str],
    recipe: dict[str, object],
    copied: bool,
) -> dict[str, str]:
    """The source's metadata plus Kura's keys (all strings, as safetensors requires)."""
    out = dict(metadata)
    if not copied:
        for key in HASH_KEYS:
            out.pop(key, None)
    out.update(
        {
            "kura.run_id": run_id,
            "kura.base_bundle": bundle_id,
            "kura.architecture": architecture,
            "kura.export_format": fmt,
            "kura.export_source": source,
            "kura.recipe": json.dumps(recipe, sort_keys=True),
        }
    )
    if epoch is not None:
        out["kura.epoch"] = str(epoch)
    if triggers:
        out["modelspec.trigger_phrase"] = ", ".join(triggers)
        out["kura.trigger_words"] = json.dumps(triggers)
    out.setdefault("modelspec.title", run_id)
    return out


def export_recipe(spec: RunSpec, datasets: list[str]) -> dict[str, object]:
    """The recipe an exported LoRA carries in its ``kura.recipe`` metadata."""
    training = spec.training
    return {
        "task": spec.task,
        "base": spec.model.base,
        "datasets": datasets,
        "rank": training.network.rank,
        "alpha": training.network.alpha,
        "learning_rate": training.learning_rate,
        "optimizer": training.optimizer,
        "scheduler": training.scheduler,
        "epochs": training.epochs,
        "max_steps": training.max_steps,
        "effective_batch": training.effective_batch,
        "seed": training.seed,
    }


def _out_path(workspace: Workspace, run_id: str, stem: str, fmt: str, out: Path | None) -> Path:
    name = f"{stem}-{fmt}.safetensors"
    if out is None:
        return workspace.run_dir(run_id) / "export" / name
    out = Path(out)
    return out / name if out.is_dir() else out
