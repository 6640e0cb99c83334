"""Read a run made with AI-Toolkit outside Kura (its UI or ``run.py``) as evidence.

``PATH`` is the job file (YAML or the UI's ``.job_config.json``) or a ``save_root`` folder
holding AI-Toolkit's copy ``config.yaml``. The save folder is
``<training_folder>/<process name>``; from it come ``loss_log.db`` (``loss/loss`` rows and
their wall times: the measured seconds per step) and the LoRA files.
"""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import yaml

from kura.backends.aitoolkit.archs import AITK_MODELS
from kura.backends.aitoolkit.follow import lora_checkpoints, read_loss_log
from kura.backends.base import ImportedRun
from kura.bounded import MAX_CONFIG_BYTES
from kura.errors import InvalidInput

__all__ = ["LORA_PROCESS_TYPES", "import_job"]

LORA_PROCESS_TYPES = ("sd_trainer", "diffusion_trainer", "ui_trainer")
"""The process types that train a LoRA (``extensions_built_in/sd_trainer/__init__.py``);
``ui_trainer`` is what AI-Toolkit's UI writes."""


def _job_path(path: Path) -> Path:
    if path.is_dir():
        for name in ("config.yaml", ".job_config.json"):
            if (path / name).is_file():
                return path / name
        raise InvalidInput(
            f"{path} holds no AI-Toolkit job (config.yaml or .job_config.json)",
            hint="pass the job file, or the run's save folder (<training_folder>/<name>)",
            path=path,
        )
    if not path.is_file():
        raise InvalidInput(f"{path} does not exist", hint="pass an AI-Toolkit job file", path=path)
    return path


def _load(path: Path) -> tuple[dict[str, Any], str]:
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise InvalidInput(f"{path} is too large for a job file", path=path)
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise InvalidInput(f"{path} does not parse: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} is not an AI-Toolkit job (no mapping)", path=path)
    return data, text


def _process(data: dict[str, Any], path: Path) -> tuple[str, dict[str, Any]]:
    config = data.get("config") if "config" in data else data
    if not isinstance(config, dict) or not isinstance(config.get("process"), list):
        raise InvalidInput(
            f"{path}: no config.process list", hint="an AI-Toolkit job file has one", path=path
        )
    process = config["process"][0]
    if not isinstance(process, dict):
        raise InvalidInput(f"{path}: config.process[0] is not a mapping", path=path)
    kind = str(process.get("type", ""))
    if kind not in LORA_PROCESS_TYPES:
        raise InvalidInput(
            f"{path}: config.process[0] is a `{kind}` job, not LoRA training"
            + (" (a slider trains a different kind of adapter)" if "slider" in kind else ""),
            hint="import-aitk reads LoRA training jobs: process type "
            + ", ".join(LORA_PROCESS_TYPES),
            path=path,
        )
    return str(config.get("name", "")), process


def _save_root(training_folder: object, name: str, job_path: Path, given: Path) -> Path:
    """Where AI-Toolkit wrote the run: ``<training_folder>/<name>``. A relative
    ``training_folder`` is relative to the folder ``run.py`` was started from, which is the
    AI-Toolkit checkout (``run.py`` inserts its CWD into ``sys.path``); jobs live in its
    ``config/`` folder or beside the output, so the job file's folder and its parent are
    tried, and a save folder given directly (holding AI-Toolkit's ``config.yaml`` copy) is
    the run itself."""
    if given.is_dir():
        return given
    folder = Path(str(training_folder)) if training_folder else None
    if folder is not None and folder.is_absolute():
        return folder / name
    relative = folder or Path()
    candidates = [job_path.parent / relative / name, job_path.parent.parent / relative / name]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0]


def _bundle(arch: str, name_or_path: str) -> str | None:
    from kura.models.bundles import get_bundle

    matches = [m for m in AITK_MODELS.values() if m.arch == arch]
    for model in matches:
        repo = get_bundle(model.bundle).files[0].repo
        if name_or_path == repo or name_or_path.rstrip("/").endswith(repo.split("/")[-1]):
            return model.bundle
    return matches[0].bundle if len(matches) == 1 else None


def import_job(path: Path) -> ImportedRun:
    job_path = _job_path(path)
    data, text = _load(job_path)
    name, process = _process(data, job_path)
    name = name.replace("[name]", "") or job_path.parent.name
    model = process.get("model") or {}
    train = process.get("train") or {}
    network = process.get("network") or {}
    arch = str(model.get("arch") or "")
    arch = arch.split(":")[0]
    bundle = _bundle(arch, str(model.get("name_or_path", ""))) if arch else None
    architecture = AITK_MODELS[bundle].architecture if bundle else None
    notes: list[str] = []
    if not arch:
        notes.append("the job names no model.arch: AI-Toolkit inferred one from is_* flags")
    save_root = _save_root(
        process.get("training_folder"), str(process.get("name", name)), job_path, path
    )
    rows = read_loss_log(save_root / "loss_log.db")
    losses = tuple((r.step, r.loss) for r in rows if r.loss is not None)
    gaps = [
        (b.wall_time - a.wall_time) / (b.step - a.step)
        for a, b in itertools.pairwise(rows)
        if b.step > a.step
    ]
    checkpoints = lora_checkpoints(save_root, name)
    final = any(step is None for step, _ in checkpoints)
    status = "succeeded" if final else ("stopped" if checkpoints else "unknown")
    if not rows:
        notes.append(f"no loss_log.db rows in {save_root} (logging.use_ui_logger was off?)")
    quantize = bool(model.get("quantize", False))
    config: dict[str, object] = {
        "network_type": str(network.get("type", "lora")),
        "batch_size": int(train.get("batch_size", 1)),
        "gradient_checkpointing": bool(train.get("gradient_checkpointing", True)),
        "quantize": quantize,
        "quantize_te": bool(model.get("quantize_te", quantize)),
        "low_vram": bool(model.get("low_vram", False)),
        "cache_text_embeddings": bool(train.get("cache_text_embeddings", False)),
        "unload_text_encoder": bool(train.get("unload_text_encoder", False)),
    }
    if quantize:
        qtype, _, adapter = str(model.get("qtype", "qfloat8")).partition("|")
        config["qtype"] = qtype
        # AI-Toolkit reads an accuracy-recovery adapter from `qtype: "uint4|repo/file"` or
        # from model.accuracy_recovery_adapter (config_modules.py:739-743)
        config["accuracy_recovery_adapter"] = bool(
            adapter or model.get("accuracy_recovery_adapter")
        )
    if config["quantize_te"]:
        config["qtype_te"] = str(model.get("qtype_te", "qfloat8"))
    if model.get("layer_offloading"):
        config["layer_offloading_transformer_percent"] = float(
            model.get("layer_offloading_transformer_percent", 1.0)
        )
    steps = train.get("steps", 1000)
    return ImportedRun(
        backend="ai-toolkit",
        source=str(job_path),
        name=name,
        architecture=architecture,
        bundle=bundle,
        config=config,
        total_steps=int(steps) if isinstance(steps, int) else None,
        last_step=rows[-1].step if rows else None,
        losses=losses,
        seconds_per_step=round(statistics.median(gaps), 4) if gaps else None,
        status=status,  # type: ignore[arg-type]
        lora_files=tuple(str(p) for _, p in checkpoints),
        job_text=text,
        notes=tuple(notes),
    )
