"""Wan 2.2 A14B's two LoRA files per save as outputs: the outputs list, resume, export and
merge-ema see both experts (``extensions_built_in/diffusion_models/wan22/
wan22_14b_model.py:452-493``, ``save_lora``). Fixtures are named and keyed exactly as that
code writes them: ``<name>[_<step:09d>]_high_noise.safetensors`` / ``…_low_noise…``, each
holding ``diffusion_model.blocks.N.<native Wan module>.lora_A/lora_B.weight`` (PEFT keys,
``toolkit/network_mixins.py:607``; renamed to the native names by ``convert_to_original``,
``toolkit/models/wan21/wan_lora_convert.py:38``; ``.transformer_1.``/``.transformer_2.``
dropped per expert, ``wan22_14b_model.py:471-478``). The base is a diffusers folder
(``transformer/`` high noise, ``transformer_2/`` low noise) of sparse headers."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from tests.builders import character_workspace
from wan22_files import BASE, MODULES, RANK, diffusers_transformer

from kura.backends.aitoolkit.follow import lora_checkpoints, resume_save
from kura.backends.registry import get_backend
from kura.errors import CheckFailed, UsageError
from kura.export.ema import merge_ema
from kura.export.lorakeys import group_modules
from kura.export.tensorio import read_tensors, serialize
from kura.runs.new import create_run
from kura.workspace import Workspace


def _expert_lora(path: Path, blocks: range, seed: int) -> Path:
    """One expert's file as ``save_lora`` writes it."""
    rng = np.random.default_rng(seed)
    tensors = {}
    for i in blocks:
        for native, _, out_features, in_features in MODULES:
            root = f"diffusion_model.blocks.{i}.{native}"
            tensors[f"{root}.lora_A.weight"] = rng.standard_normal(
                (RANK, in_features), dtype=np.float32
            ).astype(np.float16)
            tensors[f"{root}.lora_B.weight"] = rng.standard_normal(
                (out_features, RANK), dtype=np.float32
            ).astype(np.float16)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(serialize(tensors, {"software": "ai-toolkit"}))
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return character_workspace(tmp_path, intent=("intent.task=character", "intent.trigger=myaku"))


@pytest.fixture
def run_id(ws: Workspace, tmp_path: Path) -> str:
    created = create_run(
        ws, datasets=["myaku"], base=BASE, backend="ai-toolkit", now=datetime(2026, 12, 2, 1, 0)
    )
    repo = tmp_path / "Wan2.2-T2V-A14B-Diffusers-bf16"
    diffusers_transformer(repo / "transformer", blocks=2)
    diffusers_transformer(repo / "transformer_2", blocks=2)
    lock = ws.run_dir(created.run_id) / "compiled" / "run.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"models": {"roles": {"dit": {"path": str(repo)}}}}))
    return created.run_id


def _save(ws: Workspace, run_id: str, step: int | None, *, low: bool = True) -> None:
    output = ws.run_dir(run_id) / "output"
    stem = run_id if step is None else f"{run_id}_{step:09d}"
    _expert_lora(output / f"{stem}_high_noise.safetensors", range(2), seed=step or 9)
    if low:
        _expert_lora(output / f"{stem}_low_noise.safetensors", range(2), seed=(step or 9) + 1)


def test_both_experts_of_every_save_are_outputs(ws: Workspace, run_id: str) -> None:
    _save(ws, run_id, 250)
    _save(ws, run_id, 500)
    _save(ws, run_id, None)
    output = ws.run_dir(run_id) / "output"
    names = [p.name for p in get_backend("ai-toolkit").outputs(ws.run_dir(run_id)).lora_files]
    assert names == [
        f"{run_id}_000000250_high_noise.safetensors",
        f"{run_id}_000000250_low_noise.safetensors",
        f"{run_id}_000000500_high_noise.safetensors",
        f"{run_id}_000000500_low_noise.safetensors",
        f"{run_id}_high_noise.safetensors",
        f"{run_id}_low_noise.safetensors",
    ]
    assert [step for step, _ in lora_checkpoints(output, run_id)] == [
        250,
        250,
        500,
        500,
        None,
        None,
    ]


def test_resume_takes_the_newest_steps_pair(ws: Workspace, run_id: str) -> None:
    _save(ws, run_id, 250)
    _save(ws, run_id, 500)
    output = ws.run_dir(run_id) / "output"
    pair = resume_save(output, run_id)
    assert [(f.number, f.expert) for f in pair] == [(500, "high_noise"), (500, "low_noise")]
    assert get_backend("ai-toolkit").resume_arguments(ws.run_dir(run_id), trainer_run_dir="") == ()


def test_resume_refuses_a_save_missing_an_expert(ws: Workspace, run_id: str) -> None:
    _save(ws, run_id, 250)
    _save(ws, run_id, 500, low=False)  # killed between the two files
    backend = get_backend("ai-toolkit")
    with pytest.raises(CheckFailed, match="holds no low_noise LoRA") as caught:
        backend.resume_arguments(ws.run_dir(run_id), trainer_run_dir="")
    assert f"{run_id}_000000500_high_noise.safetensors" in (caught.value.hint or "")
    assert "from step 250" in (caught.value.hint or "")


def test_export_writes_both_experts_each_checked_against_its_transformer(
    ws: Workspace, run_id: str
) -> None:
    _save(ws, run_id, 250)
    _save(ws, run_id, 500)
    exported = get_backend("ai-toolkit").export(ws, run_id, epoch=None, fmt="comfyui", out=None)
    assert exported.expert == "high_noise" and exported.step == 500
    (low,) = exported.companions
    assert low.expert == "low_noise" and low.step == 500
    assert Path(exported.out).name == f"{run_id}_000000500_high_noise-comfyui.safetensors"
    assert Path(low.out).name == f"{run_id}_000000500_low_noise-comfyui.safetensors"
    assert exported.verified_against.endswith("/transformer (1 shards), in native Wan names")
    assert low.verified_against.endswith("/transformer_2 (1 shards), in native Wan names")
    for one in (exported, low):
        tensors, metadata = read_tensors(Path(one.out))
        assert metadata["kura.expert"] == one.expert
        assert "lora_unet_blocks_1_cross_attn_o" in group_modules(tensors, "musubi")
        assert one.modules == 2 * len(MODULES)
    document = exported.to_dict()
    assert document["expert"] == "high_noise"
    from kura.cli.nexts import after_export

    copy = after_export(document)[0]["command"]
    assert exported.out in copy and low.out in copy  # both files go to ComfyUI
    assert [c["expert"] for c in document["companions"]] == ["low_noise"]  # type: ignore[union-attr]


def test_the_low_noise_file_is_checked_against_the_low_noise_transformer(
    ws: Workspace, run_id: str, tmp_path: Path
) -> None:
    repo = tmp_path / "Wan2.2-T2V-A14B-Diffusers-bf16"
    (repo / "transformer_2" / "diffusion_pytorch_model.safetensors").unlink()
    diffusers_transformer(repo / "transformer_2", blocks=1)  # no block 1
    _save(ws, run_id, None)
    with pytest.raises(CheckFailed, match=f"{run_id}_low_noise") as caught:
        get_backend("ai-toolkit").export(ws, run_id, epoch=None, fmt="comfyui", out=None)
    assert "blocks.1." in caught.value.message


def test_one_out_file_for_two_experts_is_refused(ws: Workspace, run_id: str) -> None:
    _save(ws, run_id, None)
    with pytest.raises(UsageError, match="one LoRA per expert"):
        get_backend("ai-toolkit").export(
            ws, run_id, epoch=None, fmt="comfyui", out=ws.root / "one.safetensors"
        )


def test_merge_ema_averages_each_expert_outside_the_resume_folder(
    ws: Workspace, run_id: str
) -> None:
    for step in (250, 500, 750):
        _save(ws, run_id, step)
    merged = merge_ema(ws, run_id, beta=0.9)
    (low,) = merged.companions
    assert (merged.expert, low.expert) == ("high_noise", "low_noise")
    assert merged.labels == (
        "step 250 (high-noise)",
        "step 500 (high-noise)",
        "step 750 (high-noise)",
    )
    assert all("low_noise" in Path(p).name for p in low.inputs)
    export = ws.run_dir(run_id) / "export"
    assert Path(merged.out) == export / f"{run_id}-ema_high_noise.safetensors"
    assert Path(low.out) == export / f"{run_id}-ema_low_noise.safetensors"
    # AI-Toolkit resumes from the newest <name>*.safetensors in output/: never an average
    assert not list((ws.run_dir(run_id) / "output").glob("*ema*"))
    high, _ = read_tensors(Path(merged.out))
    first, _ = read_tensors(Path(merged.inputs[0]))
    assert set(high) == set(first)


def test_a_single_lora_runs_newest_step_file_is_exported(ws: Workspace, tmp_path: Path) -> None:
    # Wan 2.1 saves one file per save: <name>_<step:09d>.safetensors until the final one
    run_id = create_run(
        ws,
        datasets=["myaku"],
        base="aitk-wan2.1-t2v-14b",
        backend="ai-toolkit",
        now=datetime(2026, 12, 2, 1, 30),
    ).run_id
    repo = tmp_path / "Wan2.1-T2V-14B-Diffusers"
    diffusers_transformer(repo / "transformer", blocks=2)
    lock = ws.run_dir(run_id) / "compiled" / "run.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"models": {"roles": {"dit": {"path": str(repo)}}}}))
    output = ws.run_dir(run_id) / "output"
    for step in (100, 200):
        _expert_lora(output / f"{run_id}_{step:09d}.safetensors", range(2), seed=step)
    exported = get_backend("ai-toolkit").export(ws, run_id, epoch=None, fmt="comfyui", out=None)
    assert (exported.step, exported.expert, exported.companions) == (200, None, ())
    assert Path(exported.source).name == f"{run_id}_000000200.safetensors"
    assert exported.verified_against.endswith("/transformer (1 shards), in native Wan names")
    assert "expert" not in exported.to_dict()


def test_run_status_names_the_newest_saves_two_files(ws: Workspace, run_id: str) -> None:
    _save(ws, run_id, 250)
    _save(ws, run_id, 500)
    log = ws.run_dir(run_id) / "logs" / "train.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"{run_id}:  50%|#####| 500/1000 [05:00<05:00,  1.00s/it, loss: 1.0e-01]\n")
    progress = get_backend("ai-toolkit").progress(log)
    assert progress.last_checkpoint == (
        f"{run_id}_000000500_high_noise.safetensors + {run_id}_000000500_low_noise.safetensors"
    )
