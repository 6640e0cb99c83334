"""Wan 2.2 A14B LoRA files written by AI-Toolkit's own ``Wan2214bModel.save_lora`` (through
``aitk_wan22_save_harness.py``, one process), then read by Kura: the outputs list, the pair
resume takes, export of both experts verified against their transformers, merge-ema per
expert. Skipped without ``KURA_AITK_SRC`` and ``KURA_AITK_ENV`` (failing under ``CI=true``).
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from tests.backends.trainer_required import missing
from tests.builders import character_workspace
from wan22_files import BASE, diffusers_transformer

from kura.backends.aitoolkit.follow import resume_save
from kura.backends.registry import get_backend
from kura.export.ema import merge_ema
from kura.runs.new import create_run
from kura.workspace import Workspace

HERE = Path(__file__).parent
STEPS = (250, 500, 0)  # 0: the final save


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str, list[str]]:
    src, env = os.environ.get("KURA_AITK_SRC"), os.environ.get("KURA_AITK_ENV")
    python = Path(env or "/nonexistent") / "bin" / "python"
    if not src or not python.is_file():
        missing("set KURA_AITK_SRC and KURA_AITK_ENV to run AI-Toolkit's own Wan 2.2 save")
    root = tmp_path_factory.mktemp("aitk-wan22")
    ws = character_workspace(root, intent=("intent.task=character", "intent.trigger=myaku"))
    run_id = create_run(
        ws, datasets=["myaku"], base=BASE, backend="ai-toolkit", now=datetime(2026, 12, 2, 2, 0)
    ).run_id
    repo = root / "Wan2.2-T2V-A14B-Diffusers-bf16"
    diffusers_transformer(repo / "transformer", blocks=2)
    diffusers_transformer(repo / "transformer_2", blocks=2)
    lock = ws.run_dir(run_id) / "compiled" / "run.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"models": {"roles": {"dit": {"path": str(repo)}}}}))
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environ["PYTHONDONTWRITEBYTECODE"] = "1"
    argv = [str(python), str(HERE / "aitk_wan22_save_harness.py"), str(src)]
    argv += [str(ws.run_dir(run_id) / "output"), run_id, *map(str, STEPS)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=environ)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("KURA-REPORT "))
    return ws, run_id, json.loads(line[len("KURA-REPORT ") :])


def test_every_file_ai_toolkit_wrote_is_an_output(saved: tuple[Workspace, str, list[str]]) -> None:
    ws, run_id, written = saved
    listed = get_backend("ai-toolkit").outputs(ws.run_dir(run_id)).lora_files
    assert sorted(p.name for p in listed) == sorted(written)
    assert len(written) == 6  # two experts × (two steps + the final save)


def test_resume_and_export_take_the_newest_pair(saved: tuple[Workspace, str, list[str]]) -> None:
    ws, run_id, _ = saved
    pair = resume_save(ws.run_dir(run_id) / "output", run_id)
    assert [(f.kind, f.expert) for f in pair] == [("final", "high_noise"), ("final", "low_noise")]
    exported = get_backend("ai-toolkit").export(ws, run_id, epoch=None, fmt="comfyui", out=None)
    files = [exported, *exported.companions]
    assert [Path(e.source).name for e in files] == [
        f"{run_id}_high_noise.safetensors",
        f"{run_id}_low_noise.safetensors",
    ]
    assert [e.unmapped for e in files] == [(), ()] and all(e.modules == 20 for e in files)


def test_merge_ema_averages_each_experts_steps(saved: tuple[Workspace, str, list[str]]) -> None:
    ws, run_id, _ = saved
    merged = merge_ema(ws, run_id)
    assert [Path(p).name for p in merged.inputs] == [
        f"{run_id}_000000250_high_noise.safetensors",
        f"{run_id}_000000500_high_noise.safetensors",
        f"{run_id}_high_noise.safetensors",
    ]
    assert [c.expert for c in merged.companions] == ["low_noise"]
