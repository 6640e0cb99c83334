"""The real KohakuMoss run through Kura's CLI: the path a user types, on a tiny model.

KohakuMoss's own builders make a tiny random MOSS-shaped pipeline root (DiT, Qwen3.5 text
encoder, FLUX.2 VAE, tokenizer); four captioned images make the dataset. Then only Kura's
CLI entry point is driven: ``init``, ``dataset add``/``set``, ``model check``, ``run new
--backend kohakumoss --set model.root=…``, ``run plan``, ``run approve``, ``run launch
--foreground``, ``run watch``, ``run status``, ``run evaluate``, ``export``, and a resume to
more steps. Every assertion is on what the real trainer wrote (metrics.jsonl, the exported
safetensors, its log) compared with what Kura reports. Same skip/fail rule as the other
real-run tests (``moss_env``).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.backends.cli_driver import Kura
from tests.backends.kohakumoss.tinyrun import CPU
from tests.backends.kohakumoss.tinyrun import images as _images
from tests.web.helpers import client

from kura.backends.registry import get_backend
from kura.execution.attempts import attempt_refs, run_attempts
from kura.models.header import read_header
from kura.workspace import Workspace

pytestmark = pytest.mark.slow


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _missing_block(root: Path, out: Path) -> Path:
    """A copy of the tiny pipeline root whose DiT lacks block 1 (its keys renamed to block 2
    in the header: same bytes, the blocks read 0 and 2)."""
    shutil.copytree(root, out)
    dit = out / "transformer" / "diffusion_pytorch_model-00001-of-00001.safetensors"
    data = dit.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = data[8 : 8 + size].replace(b'"layers.1.', b'"layers.2.')
    dit.write_bytes(data[:8] + header + data[8 + size :])
    (out / "moss-tiny-dit.safetensors").unlink()
    return out


def test_the_cli_trains_plans_follows_exports_and_resumes(
    moss_env: Any, tiny_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KURA_KOHAKUMOSS_ENV", str(moss_env.path))
    workspace = tmp_path / "ws"
    kura = Kura(workspace)
    kura("init", str(workspace))
    kura("dataset", "add", "kura", str(_images(tmp_path / "incoming")), "--resolution", "64")
    kura("dataset", "set", "kura", "intent.trigger=kura", "intent.task=character")

    # Model files by header: the tiny DiT is a MOSS DiT of a non-standard shape.
    files = (
        tiny_root / "transformer" / "diffusion_pytorch_model-00001-of-00001.safetensors",
        tiny_root / "text_encoder" / "model.safetensors",
        tiny_root / "vae" / "diffusion_pytorch_model.safetensors",
        tiny_root / "moss-tiny-dit.safetensors",
    )
    _, checked = kura("model", "check", *map(str, files), "--arch", "moss_image")
    assert [f["component"] for f in checked["files"]] == [
        "moss-image-dit-custom",
        "qwen35-text",
        "flux2-vae-custom",
        "moss-image-dit-custom",
    ]
    # A DiT missing a block is refused by its header, before any run is planned.
    broken = _missing_block(tiny_root, tmp_path / "broken")
    code, refused = kura(
        "model", "check", str(broken / files[0].relative_to(tiny_root)), "--arch", "moss_image",
        ok=False,
    )  # fmt: skip
    assert code != 0 and "layers 1 missing" in " ".join(refused["files"][0]["verdict"]["refusals"])

    sets = [f"backend.config.{k}={v}" for k, v in CPU.items()] + [
        f"model.root={tiny_root}",
        "execution.executor=host",
        "training.max_steps=6",
        "training.network.rank=4",
        "training.network.alpha=4",
        "training.warmup_steps=0",
        "training.sample_prompts=['kura, 1girl, smile']",
        "training.sample_every_n_epochs=1",
    ]
    argv = ["run", "new", "--dataset", "kura", "--base", "moss-image-base"]
    argv += ["--backend", "kohakumoss", *[x for s in sets for x in ("--set", s)]]

    # Bad input first: a wrong type is Kura's error naming the key, before KohakuMoss runs.
    _, bad = kura(*argv, "--set", "backend.config.MAX_TOKENS=big")
    code, refused = kura("run", "plan", bad["run"], "--gpu", "cpu", ok=False)
    assert code != 0
    assert "MAX_TOKENS: expects int, got str 'big'" in refused["error"]["message"]
    assert not (workspace / "runs" / bad["run"] / "plan.md").exists()

    # Sampling on a non-released shape without SAMPLE_SKIP_LAYERS would stop the run at its
    # first sample: compile refuses it, naming the knob.
    kept = [s for s in sets if not s.startswith("backend.config.SAMPLE_SKIP_LAYERS")]
    _, unsafe = kura(*argv[:6], "--backend", "kohakumoss", *[x for s in kept for x in ("--set", s)])
    code, refused = kura("run", "plan", unsafe["run"], "--gpu", "cpu", ok=False)
    assert code != 0 and "SAMPLE_SKIP_LAYERS" in refused["error"]["message"]

    # A nested knob KohakuMoss's own checker passes unread is refused like a flat one, by
    # the code that builds it in the run (here AnySchedule).
    schedule = "backend.config.SCHEDULE={mode: cosinez, warmup: 0, end: -1}"
    _, nested = kura(*argv, "--set", schedule)
    code, refused = kura("run", "plan", nested["run"], "--gpu", "cpu", ok=False)
    assert code != 0 and "SCHEDULE['mode']='cosinez' is not one of" in refused["error"]["message"]

    # The broken DiT fails the plan, naming KohakuMoss's own load accounting.
    at_broken = [a.replace(str(tiny_root), str(broken)) for a in argv]
    _, damaged = kura(*at_broken)
    code, refused = kura("run", "plan", damaged["run"], "--gpu", "cpu", ok=False)
    message = refused["error"]["message"]
    assert code != 0 and "KohakuMoss's own load of this DiT" in message
    assert "missing ['layers.1.norm1.weight'" in message

    _, created = kura(*argv)
    run = created["run"]
    run_dir = workspace / "runs" / run
    _, plan = kura("run", "plan", run, "--gpu", "cpu")
    assert plan["fits"] is True and plan["estimate"]["peak_vram_gib"] > 0
    titles = [s["title"] for s in plan["estimate"]["trainer_report"]]
    assert "KohakuMoss data plan (inspect_data)" in titles
    text = (run_dir / "plan.md").read_text()
    assert "4 rows, 40 items per epoch" not in text  # repeats are run.yaml's (1 here)
    assert "catalog: 4 rows, 4 items per epoch" in text
    assert "KohakuMoss estimator calibration" in text and "measured" in text
    assert "CPU only (no accelerator), 16 GB host" in text  # the machine it runs on
    assert "RTX" not in text.split("## Resources")[1].split("##")[0]
    _assert_band_holds_the_calibration(text)
    _assert_nested_knobs_are_checked(moss_env, run_dir / "compiled" / "kohakumoss" / "train.py")
    train_py = (run_dir / "compiled" / "kohakumoss" / "train.py").read_text()
    assert "scripts/train/moss.py" in train_py.split('"""')[1]
    assert "ARCH_OVERRIDES" in train_py and "vram_8g.py" in train_py

    kura("run", "approve", run)
    _, launched = kura("run", "launch", run, "--foreground")
    assert launched["state"]["status"] == "succeeded", launched
    _, watched = kura("run", "watch", run, "--interval", "0.2")
    _, status = kura("run", "status", run)
    out = run_dir / "output" / run
    rows = _rows(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    for doc in (watched, status):
        progress = doc["progress"]
        assert (progress["step"], progress["total"]) == (rows[-1]["step"], 6)
        assert progress["loss"] == rows[-1]["loss"]
        assert progress["last_checkpoint"].endswith("step_00000006")
    kura("run", "evaluate", run, "--rating", "4", "--notes", "tiny CPU run")
    assert "tiny CPU run" in (run_dir / "notes.md").read_text()

    for fmt, suffix in (("comfyui", "comfy"), ("lycoris", "lycoris")):
        _, exported = kura("export", run, "--format", fmt)
        target = Path(exported["out"])
        assert target == run_dir / "export" / f"{run}-{suffix}.safetensors"
        assert target.read_bytes() == (out / "export" / target.name).read_bytes()  # no conversion
        header = read_header(target)
        assert header.metadata["kohakumoss_format"] == suffix
        downs = {k: v.shape for k, v in header.tensors.items() if k.endswith("lora_down.weight")}
        assert len(downs) == 12 == exported["modules"]
        assert downs["lora_unet_layers_0_proj_q.lora_down.weight"] == (4, 64)
        ups = header.tensors["lora_unet_layers_1_proj_ffn_up_gate.lora_up.weight"]
        assert ups.shape == (256, 4)
    code, _ = kura("export", run, "--format", "diffusers", ok=False)
    assert code != 0

    # Resume: three more steps, approved again, continue from the last periodic checkpoint.
    spec = run_dir / "run.yaml"
    spec.write_text(spec.read_text().replace("max_steps: 6", "max_steps: 9"))
    kura("run", "plan", run, "--gpu", "cpu")
    kura("run", "approve", run)
    _, resumed = kura("run", "resume", run, "--foreground")
    assert resumed["state"]["status"] == "succeeded", resumed
    assert [r["step"] for r in _rows(out / "metrics.jsonl")] == list(range(1, 10))
    log = (out / "log.txt").read_text()
    assert "resuming from" in log and "step_00000006" in log.split("resuming from")[-1][:300]
    _, status = kura("run", "status", run)
    assert (status["progress"]["step"], status["progress"]["total"]) == (9, 9)
    # The loss history credits KohakuMoss's rows to the attempts by their times: the first
    # attempt logged 1-6, the resume 7-9 (appended to the same metrics.jsonl).
    rows = _rows(out / "metrics.jsonl")
    assert status["scalars"]["loss"] == [9, rows[-1]["loss"]]
    history = get_backend("kohakumoss").loss_history(run_dir, attempt_refs(run_attempts(run_dir)))
    assert {a.attempt: [p.step for p in a.points] for a in history.attempts} == {
        1: [1, 2, 3, 4, 5, 6],
        2: [7, 8, 9],
    }
    assert [p.loss for p in history.attempts[1].points] == [r["loss"] for r in rows[-3:]]
    page = client(Workspace(workspace)).get(f"/runs/{run}").text
    assert page.count('<polyline class="series ') >= 2 and "attempt 2 (EMA)" in page


def _assert_band_holds_the_calibration(plan_md: str) -> None:
    """Every measured range plan.md prints lies in the band plan.md prints."""
    lines = [ln for ln in plan_md.splitlines() if "nvidia-smi" in ln or "band used:" in ln]
    band = next(ln for ln in lines if "band used:" in ln)
    low, high = (float(x) for x in re.findall(r"([-+]\d+) %", band)[:2])
    cells = [ln for ln in lines if "nvidia-smi" in ln]
    assert len(cells) == 2, lines
    for line in cells:
        cell_low, cell_high = (float(x) for x in re.findall(r"([-+]\d+) %", line)[:2])
        assert low <= cell_low <= cell_high <= high, (band, line)


def _assert_nested_knobs_are_checked(env: Any, train: Path) -> None:
    """KohakuMoss's own config_problems passes these; Kura's helper builds each as the run
    would and refuses it."""
    from kura.backends.kohakumoss.queries import config_problems

    overlays = {
        "schedule_key": 'SCHEDULE = {"mode": "cosine", "warmupz": 0, "end": -1}',
        "caption": 'CAPTION = {"template": "nope"}',
        "caption_key": 'CAPTION = {"template": "tags", "shufle": True}',
        "workers": "NUM_WORKERS = -1",
    }
    paths = []
    for name, line in overlays.items():
        path = train.parent / f"overlay_{name}.py"
        path.write_text(
            '"""Overlay. Drives scripts/train/moss.py."""\n'
            "from kohakuengine import use_config\n"
            f"use_config({train.as_posix()!r})\n{line}\n"
        )
        paths.append(path)
    found = {c.path.stem: c.blocking for c in config_problems(env, (train, *paths))}
    assert found["train"] == ()
    assert "unexpected keyword argument 'warmupz'" in found["overlay_schedule_key"][0]
    assert "unknown caption template 'nope'" in found["overlay_caption"][0]
    assert "unexpected keyword argument 'shufle'" in found["overlay_caption_key"][0]
    assert "torch's DataLoader refuses" in found["overlay_workers"][0]
    for path in paths:
        path.unlink()
