"""KohakuMossBackend's verbs that need no environment: remedies, diagnosis codes, progress
from a run folder, resume, and the pipeline root resolved by header."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kura.backends.kohakumoss.backend import BACKEND
from kura.backends.registry import get_backend
from kura.errors import CheckFailed
from kura.models.bundles import get_bundle
from kura.models.layouts import write_component
from kura.models.resolve import resolve_bundle


def test_registered_and_serves_moss_image_only() -> None:
    assert get_backend("kohakumoss") is BACKEND
    assert BACKEND.serves("moss_image") and not BACKEND.serves("flux2")
    assert get_bundle("moss-image-base").backend == "kohakumoss"


@pytest.mark.parametrize(
    ("config", "key", "to"),
    [
        ({"vram_layer": "24g", "MEMORY_PROFILE": "balanced"}, "MEMORY_PROFILE", "low"),
        ({"vram_layer": "16g", "MEMORY_PROFILE": "low"}, "MEMORY_PROFILE", "minimal"),
        ({"vram_layer": "8g", "MEMORY_PROFILE": "minimal"}, "vram_layer", "6g"),
    ],
)
def test_remedy_walks_profiles_then_layers(config: dict[str, object], key: str, to: str) -> None:
    rung = BACKEND.remedy(config, step="train", phase="training")
    assert (rung["key"], rung["to"]) == (key, to)


def test_diagnosis_codes_and_oom_remedy() -> None:
    config = {"vram_layer": "24g", "MEMORY_PROFILE": "balanced"}
    oom = BACKEND.diagnose(
        "Traceback …\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB",
        step="train",
        exit_code=1,
        config=config,
    )
    assert oom.code == "cuda_oom" and oom.next["to"] == "low"
    assert "OutOfMemoryError" in oom.evidence
    miss = BACKEND.diagnose(
        "kohakumoss_data.cache.settings.CacheMiss: 4 latents missing",
        step="train",
        exit_code=1,
        config=config,
    )
    assert miss.code == "cache_miss" and "cache" in str(miss.next["why"])
    killed = BACKEND.diagnose("", step="train", exit_code=143, config=config)
    assert killed.code == "killed" and "no checkpoint" in killed.message


def test_progress_and_resume_read_the_runs_output_folder(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    out = run / "output" / "r1"
    (run / "logs").mkdir(parents=True)
    out.mkdir(parents=True)
    rows = [{"step": s, "time": s, "loss": 2.0 / s, "lr": 1e-4, "step_time": 0.5} for s in (1, 2)]
    (out / "metrics.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    (out / "log.txt").write_text("[t] [training.entry] [INFO] training from step 0 to 4\n")
    with pytest.raises(CheckFailed, match="no KohakuMoss checkpoint"):
        BACKEND.resume_arguments(run, trainer_run_dir=str(run))
    (out / "checkpoints" / "step_00000002").mkdir(parents=True)
    (out / "checkpoints" / "step_00000002" / "state.json").write_text("{}")
    progress = BACKEND.progress(run / "logs" / "train.log")
    assert (progress.step, progress.total, progress.loss, progress.eta_seconds) == (2, 4, 1.0, 1)
    assert progress.last_checkpoint and progress.last_checkpoint.endswith("step_00000002")
    assert BACKEND.progress(run / "logs" / "cache_text.log").step is None
    assert BACKEND.resume_arguments(run, trainer_run_dir=str(run)) == ("--set", "RESUME=latest")


def test_a_pipeline_root_resolves_each_folder_by_header(tmp_path: Path) -> None:
    root = tmp_path / "MOSS-Image-Base"
    write_component(root / "transformer" / "m-00001-of-00001.safetensors", "moss-image-dit")
    write_component(root / "text_encoder" / "model.safetensors", "qwen35-text")
    write_component(root / "vae" / "diffusion_pytorch_model.safetensors", "flux2-vae")
    found = resolve_bundle("moss-image-base", root=root, hf_cache=tmp_path / "hf")
    assert found.ok, found.to_dict()
    assert {r.spec.slot: r.report.component for r in found.roles if r.report} == {
        "transformer": "moss-image-dit",
        "text_encoder": "qwen35-text",
        "vae": "flux2-vae",
    }
    write_component(root / "vae" / "diffusion_pytorch_model.safetensors", "flux1-ae")
    refused = resolve_bundle("moss-image-base", root=root, hf_cache=tmp_path / "hf")
    assert not refused.ok and refused.role("vae").status == "refused"


def test_a_fused_qkv_moss_dit_of_any_shape_is_a_moss_dit(tmp_path: Path) -> None:
    from kura.models.identify import identify
    from kura.models.layouts import write_sparse_safetensors

    dim, ffn = 96, 192
    tensors = {
        "shared_block_modulation.weight": ("BF16", [6 * dim, dim]),
        "video_embedder.weight": ("BF16", [dim, 128]),
        "text_embedder.proj.weight": ("BF16", [dim, 48]),
        "layers.0.proj.qkv.weight": ("BF16", [3 * dim, dim]),
        "layers.0.proj.o.weight": ("BF16", [dim, dim]),
        "layers.0.proj.ffn_down.weight": ("BF16", [dim, ffn]),
    }
    fused = identify(write_sparse_safetensors(tmp_path / "fused.safetensors", tensors))
    assert (fused.component, fused.role) == ("moss-image-dit-custom", "dit")
    del tensors["shared_block_modulation.weight"]
    other = identify(write_sparse_safetensors(tmp_path / "other.safetensors", tensors))
    assert other.component != "moss-image-dit-custom"
