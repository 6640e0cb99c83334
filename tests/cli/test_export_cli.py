"""`kura export` and `kura export merge-ema` through the real entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from tests.builders import character_workspace
from tests.export.lorafiles import musubi_lora, write_lora

from kura.cli.main import main
from kura.export.lorakeys import group_modules
from kura.export.tensorio import read_tensors
from kura.models.layouts import write_component
from kura.runs.new import create_run
from kura.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return character_workspace(tmp_path, intent=("intent.task=character", "intent.trigger=myaku"))


def new_run(ws: Workspace, base: str = "zimage-base") -> str:
    return create_run(ws, datasets=["myaku"], base=base, now=datetime(2026, 11, 30, 9, 0)).run_id


def run(capsys: pytest.CaptureFixture[str], ws: Workspace, *args: str) -> tuple[int, dict]:
    code = main(["-w", str(ws.root), *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def drop(
    ws: Workspace, run_id: str, name: str, architecture: str = "zimage", seed: int = 0
) -> Path:
    return write_lora(ws.run_dir(run_id) / "output" / name, musubi_lora(architecture, seed=seed))


def test_export_final_for_comfyui(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = new_run(ws)
    drop(ws, run_id, f"{run_id}-000001.safetensors", seed=1)
    drop(ws, run_id, f"{run_id}.safetensors", seed=2)
    code, doc = run(capsys, ws, "export", run_id)
    assert code == 0, doc
    assert doc["kind"] == "lora-export"
    assert doc["format"] == "comfyui" and doc["copied"] is False and doc["unmapped"] == []
    assert doc["source"].endswith(f"{run_id}.safetensors")
    assert "zimage-dit" in doc["verified_against"]
    out = Path(doc["out"])
    tensors, metadata = read_tensors(out)
    assert doc["keys"] == len(tensors)
    roots = set(group_modules(tensors, "musubi"))
    assert "lora_unet_layers_0_attention_qkv" in roots
    assert all(v.dtype == ml_dtypes.bfloat16 for v in tensors.values())
    assert metadata == doc["metadata"]
    assert metadata["kura.run_id"] == run_id
    assert metadata["kura.base_bundle"] == "zimage-base"
    assert metadata["modelspec.trigger_phrase"] == "myaku"
    assert metadata["ss_network_module"] == "networks.lora"  # kept from Musubi
    assert "sshs_model_hash" not in metadata  # stale once the tensors changed
    assert json.loads(metadata["kura.recipe"])["datasets"] == ["myaku"]


def test_export_epoch_as_musubi_is_a_copy(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = new_run(ws)
    source = drop(ws, run_id, f"{run_id}-000001.safetensors")
    target = ws.root / "out" / "mine.safetensors"
    code, doc = run(
        capsys, ws, "export", run_id, "--epoch", "1", "--format", "musubi", "--out", str(target)
    )
    assert code == 0, doc
    assert doc["copied"] is True and doc["epoch"] == 1 and doc["out"] == str(target)
    original, _ = read_tensors(source)
    copied, metadata = read_tensors(target)
    assert set(copied) == set(original)
    assert all(
        np.array_equal(copied[k].view(np.uint16), original[k].view(np.uint16)) for k in original
    )
    assert metadata["sshs_model_hash"] == "0" * 64  # same tensor bytes, hash still valid


def test_export_refuses_a_lora_of_another_architecture(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = new_run(ws)
    drop(ws, run_id, f"{run_id}.safetensors", architecture="wan")
    code, doc = run(capsys, ws, "export", run_id)
    assert code == 1
    assert doc["error"]["type"] == "check-failed"
    assert "lora_unet_blocks_0_self_attn_q" in doc["error"]["message"]
    assert not (ws.run_dir(run_id) / "export").exists()


def test_export_of_a_missing_epoch(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = new_run(ws)
    drop(ws, run_id, f"{run_id}-000002.safetensors")
    code, doc = run(capsys, ws, "export", run_id, "--epoch", "5")
    assert code == 6
    assert "saved epochs: 2" in doc["error"]["hint"]


def test_export_comfyui_unsupported_architecture(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = new_run(ws, base="framepack")
    drop(ws, run_id, f"{run_id}.safetensors", architecture="framepack")
    code, doc = run(capsys, ws, "export", run_id)
    assert code == 7
    assert "framepack" in doc["error"]["message"]
    code, doc = run(capsys, ws, "export", run_id, "--format", "diffusers")
    assert code == 0, doc
    assert doc["mode"] == "diffusers"


def test_merge_ema(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = new_run(ws)
    for epoch in (1, 2, 3):
        drop(ws, run_id, f"{run_id}-{epoch:06d}.safetensors", seed=epoch)
    drop(ws, run_id, f"{run_id}.safetensors", seed=9)
    code, doc = run(capsys, ws, "export", "merge-ema", run_id, "--beta", "0.9", "--beta2", "0.6")
    assert code == 0, doc
    assert doc["kind"] == "lora-ema"
    assert doc["labels"] == ["epoch 1", "epoch 2", "epoch 3", "final"]
    assert doc["betas"] == pytest.approx([0.9, 0.75, 0.6])
    out = Path(doc["out"])
    assert out.name == f"{run_id}-ema.safetensors"
    tensors, metadata = read_tensors(out)
    assert json.loads(metadata["kura.ema_inputs"])[0] == f"{run_id}-000001.safetensors"
    assert metadata["kura.ema_beta2"] == "0.6"
    assert all(v.dtype == ml_dtypes.bfloat16 for v in tensors.values())
    # the EMA file is not mistaken for a checkpoint by a later export
    code, doc = run(capsys, ws, "export", run_id, "--epoch", "3")
    assert code == 0 and doc["source"].endswith("-000003.safetensors")


def test_help_does_not_import_numpy_or_safetensors() -> None:
    script = (
        "import sys\n"
        "from kura.cli import main as m\n"
        "code = m.main(['export', '--help'])\n"
        "print(sorted(n for n in ('numpy', 'safetensors', 'ml_dtypes') if n in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert "merge-ema" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def lock_dit(ws: Workspace, run_id: str, dit: Path | None) -> None:
    lock = ws.run_dir(run_id) / "compiled" / "run.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    path = str(dit) if dit is not None else None
    lock.write_text(json.dumps({"models": {"roles": {"dit": {"path": path}}}}))


def test_export_verifies_against_the_locked_dit_header(
    ws: Workspace, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run_id = new_run(ws)
    drop(ws, run_id, f"{run_id}.safetensors")
    dit = write_component(tmp_path / "z_image_bf16.safetensors", "zimage-dit")
    lock_dit(ws, run_id, dit)
    code, doc = run(capsys, ws, "export", run_id)
    assert code == 0, doc
    assert doc["verified_against"] == f"header of {dit}"

    wan = write_component(tmp_path / "wan.safetensors", "wan-t2v-14b-dit")
    lock_dit(ws, run_id, wan)
    code, doc = run(capsys, ws, "export", run_id, "--out", str(tmp_path / "x.safetensors"))
    assert code == 1 and doc["error"]["type"] == "check-failed"
    assert "lora_unet_layers_0_attention_to_q" in doc["error"]["message"]
    assert not (tmp_path / "x.safetensors").exists()

    lock_dit(ws, run_id, tmp_path / "gone.safetensors")
    code, doc = run(capsys, ws, "export", run_id)
    assert code == 6 and "gone.safetensors" in doc["error"]["message"]


def test_pending_lock_uses_the_bundle_layout(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = new_run(ws)
    drop(ws, run_id, f"{run_id}.safetensors")
    lock_dit(ws, run_id, None)
    code, doc = run(capsys, ws, "export", run_id, "--format", "diffusers")
    assert code == 0, doc
    assert "zimage-dit" in doc["verified_against"]
    assert doc["metadata"]["kura.export_format"] == "diffusers"
