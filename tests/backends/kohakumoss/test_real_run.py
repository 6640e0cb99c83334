"""A real KohakuMoss training run on CPU, driven by Kura's backend code.

Tiny random MOSS-shaped DiT (KohakuMoss's builder), tiny random Qwen3.5 text encoder and
FLUX.2 VAE (the real classes), four captioned images. Kura compiles the configs over the
installed preset stack, KohakuMoss validates them, the four commands run without a TTY, and
the assertions are on what the trainer wrote: metrics, checkpoints, the exported LoRA keys
and shapes, resume from the last checkpoint, and SIGTERM's exit 143.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from kura.backends.kohakumoss.compile import (
    MossCompiled,
    MossCompileInputs,
    MossDataset,
    MossModel,
    MossStep,
    compile_moss,
    resume_step,
)
from kura.backends.kohakumoss.diagnose import diagnose
from kura.backends.kohakumoss.env import EnvLocation
from kura.backends.kohakumoss.exportcheck import check_export, dit_linears
from kura.backends.kohakumoss.follow import read_metrics, read_progress
from kura.backends.kohakumoss.knobs import MossRecipe
from kura.backends.kohakumoss.queries import (
    LayerChoice,
    config_problems,
    data_plan,
    infer_arch,
    knob_types,
    layer_stack,
)
from kura.execution.logs import diagnose_step

pytestmark = pytest.mark.slow

CAPTIONS = (
    "kura, 1girl, smile, red hair",
    "kura, 1girl, standing, blue dress",
    "kura, portrait, red hair, outdoors",
    "kura, 1girl, sitting, red hair",
)
CPU_KNOBS = {
    "TARGET_AREA": 4096,
    "MAX_TOKENS": 512,
    "NUM_WORKERS": 0,
    "DATA_SCAN_WORKERS": 1,
    "PIN_MEMORY": False,
    "TUNE": "off",
    "SAMPLE_STEPS": 2,
    "SAMPLE_SIZE": (64, 64),
    "SAMPLE_SKIP_LAYERS": (),
}


def make_dataset(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for i, (size, caption) in enumerate(
        zip(((64, 64), (96, 64), (64, 96), (80, 80)), CAPTIONS, strict=True)
    ):
        image = Image.new("RGB", size, (40 * i, 100, 150))
        ImageDraw.Draw(image).ellipse((8, 8, size[0] - 8, size[1] - 8), fill=(200, 50, 50))
        image.save(folder / f"img{i}.png")
        (folder / f"img{i}.txt").write_text(caption, encoding="utf-8")
    return folder


def recipe(steps: int) -> MossRecipe:
    return MossRecipe(
        learning_rate=1e-4,
        steps=steps,
        rank=4,
        alpha=4.0,
        seed=0,
        warmup_steps=0,
        max_grad_norm=1.0,
        save_every=3,
        sample_every=3,
        sample_prompts=("kura, 1girl, smile, red hair",),
        log_every=1,
    )


def write(compiled: MossCompiled, run_dir: Path) -> None:
    for name, text in compiled.files.items():
        path = run_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run_step(step: MossStep, log: Path) -> int:
    """Run one step the way the host executor does: output to a file, no TTY, no pipe."""
    env = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"} | dict(step.env)
    with log.open("wb") as out:
        return subprocess.run(
            list(step.argv),
            cwd=step.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
            timeout=600,
        ).returncode


@pytest.fixture(scope="module")
def inputs(
    moss_env: EnvLocation, tiny_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> MossCompileInputs:
    base = tmp_path_factory.mktemp("moss-run")
    arch = infer_arch(moss_env, tiny_root)
    assert not arch.is_named and arch.dim == 64 and arch.depth == 2
    stack = layer_stack(
        moss_env, LayerChoice(algo="lora", source="folder", precision="bf16", vram_gib=8)
    )
    assert stack.vram_layer == "8g"
    dataset = make_dataset(base / "datasets" / "kura" / "media")
    return MossCompileInputs(
        run_id="tiny-run",
        run_dir=base / "runs" / "tiny-run",
        env=moss_env,
        stack=stack,
        model=MossModel(root=tiny_root, arch=arch),
        datasets=(MossDataset("kura", dataset, ".txt", repeats=10, trigger="kura"),),
        recipe=recipe(6),
        knob_types=knob_types(moss_env),
        overrides=CPU_KNOBS,
        device="cpu",
    )


def test_tiny_model_trains_for_real(
    moss_env: EnvLocation, inputs: MossCompileInputs, tiny_root: Path
) -> None:
    run_dir = inputs.run_dir
    compiled = compile_moss(inputs)
    write(compiled, run_dir)
    train_text = compiled.files["compiled/kohakumoss/train.py"]
    assert "scripts/train/moss.py" in train_text.split('"""')[1]
    assert (
        f"use_config({(inputs.stack.root / 'configs/moss/vram/vram_8g.py').as_posix()!r})"
        in train_text
    )

    checked = config_problems(moss_env, (compiled.train_config, compiled.data_config))
    assert [c.blocking for c in checked] == [(), ()], checked

    plan = data_plan(moss_env, compiled.data_config)
    assert plan.rows == 4 and plan.epoch_items == 40.0 and plan.batches >= 1

    timings = {}
    for step in compiled.steps:
        started = time.monotonic()
        rc = run_step(step, run_dir / f"{step.name}.log")
        timings[step.name] = time.monotonic() - started
        assert rc == 0, (run_dir / f"{step.name}.log").read_text()[-3000:]
    print("step seconds:", {k: round(v, 1) for k, v in timings.items()})

    out = compiled.output_dir
    rows = read_metrics(out / "metrics.jsonl")
    raw = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r.step for r in rows] == [r["step"] for r in raw] == [1, 2, 3, 4, 5, 6]
    progress = read_progress(out)
    assert (progress.step, progress.total) == (6, 6)
    assert progress.loss == raw[-1]["loss"] and progress.lr == raw[-1]["lr"]
    assert progress.eta_seconds == 0
    assert progress.last_checkpoint and progress.last_checkpoint.endswith("step_00000006")

    linears = dit_linears((tiny_root / "moss-tiny-dit.safetensors",))
    assert len(progress.exported) == 2
    for path in map(Path, progress.exported):
        verdict = check_export(path, linears)
        assert verdict.ok, verdict.problems
        assert (verdict.modules, verdict.rank) == (2 * 6, 4)

    # Caches live under the run, never in the dataset folder.
    assert sorted(p.name for p in inputs.datasets[0].media_dir.iterdir()) == sorted(
        [f"img{i}.png" for i in range(4)] + [f"img{i}.txt" for i in range(4)]
    )
    assert (compiled.cache_dir / "latents.db").exists() and (
        compiled.cache_dir / "text.db"
    ).exists()

    # Resume: three more steps continue from the last periodic checkpoint.
    longer = compile_moss(replace(inputs, recipe=recipe(9)))
    write(longer, run_dir)
    rc = run_step(resume_step(longer.steps[-1]), run_dir / "resume.log")
    assert rc == 0, (run_dir / "resume.log").read_text()[-3000:]
    resumed = read_progress(out)
    assert resumed.resumed_from and resumed.resumed_from.endswith("step_00000006")
    assert [r.step for r in read_metrics(out / "metrics.jsonl")] == list(range(1, 10))
    assert (resumed.step, resumed.total) == (9, 9)


def test_sigterm_leaves_the_last_periodic_checkpoint(
    moss_env: EnvLocation, inputs: MossCompileInputs
) -> None:
    run = replace(
        inputs, run_id="tiny-term", run_dir=inputs.run_dir.parent / "tiny-term", recipe=recipe(400)
    )
    compiled = compile_moss(replace(run, overrides={**CPU_KNOBS, "SAMPLE_STEPS": 1}))
    write(compiled, run.run_dir)
    for step in compiled.steps[:3]:
        assert run_step(step, run.run_dir / f"{step.name}.log") == 0
    train = compiled.steps[-1]
    env = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"} | dict(train.env)
    log = run.run_dir / "train.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            list(train.argv),
            cwd=train.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if (compiled.output_dir / "checkpoints" / "step_00000003" / "state.json").is_file():
                break
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=120)
    assert rc == 143
    progress = read_progress(compiled.output_dir)
    assert progress.last_checkpoint is not None and progress.exported == ()
    verdict = diagnose("train", rc, log.read_text()[-20000:], checkpoint=progress.last_checkpoint)
    assert verdict.kind == "killed" and progress.last_checkpoint in verdict.message
    # What `kura run status` reports (the executor's diagnosis of the step's log): killed
    # by SIGTERM, resume offered, since the periodic checkpoint is there.
    found = diagnose_step(
        log, backend="kohakumoss", step="train", exit_code=rc, config={}, run_dir=run.run_dir
    )
    assert found["code"] == "killed" and "SIGTERM (exit status 143 = 128 + 15)" in str(
        found["message"]
    )
    assert found["next"]["command"] == "kura run resume tiny-term"

    # SIGKILL (the OOM killer's signal) on the resumed run: KohakuMoss cannot catch it.
    resumed = resume_step(train)
    with (run.run_dir / "resume.log").open("wb") as out:
        proc = subprocess.Popen(
            list(resumed.argv),
            cwd=resumed.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        later = compiled.output_dir / "checkpoints" / "step_00000006" / "state.json"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not later.is_file():
            assert proc.poll() is None, (run.run_dir / "resume.log").read_text()[-3000:]
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait(timeout=60)
    assert rc == -9
    found = diagnose_step(
        run.run_dir / "resume.log",
        backend="kohakumoss",
        step="train",
        exit_code=rc,
        config={},
        run_dir=run.run_dir,
    )
    assert found["code"] == "killed" and "SIGKILL (signal 9)" in str(found["message"])
    assert found["next"]["action"] == "resume"
    assert str(read_progress(compiled.output_dir).last_checkpoint).endswith("step_00000006")


def test_kuras_dit_key_lists_are_kohakumosss_own(moss_env: EnvLocation) -> None:
    """``ditcheck``'s keys (what ``kura model check`` requires of a MOSS DiT) are the keys
    KohakuMoss 0.1.0's ``base_keys`` builds, for the tiny shape and the released one."""
    from kura.backends.kohakumoss.ditcheck import expected_keys

    script = (
        "import json\n"
        "from kohakumoss.model.io.load import base_keys\n"
        "from kohakumoss.model.io.keymap import DERIVED\n"
        "from kohakumoss.types.arch import MossArchConfig, PRESETS\n"
        "tiny = MossArchConfig(dim=64, depth=2, heads=2, ffn_dim=128, text_dim=32,"
        " text_blocks=1, freq_dim=32, negative_skip_layers=())\n"
        "print(json.dumps([sorted(k for k in base_keys(c) if k not in DERIVED)"
        " for c in (tiny, PRESETS['base'])]))\n"
    )
    done = subprocess.run(
        [str(moss_env.python), "-c", script], capture_output=True, text=True, check=True
    )
    tiny, base = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(tiny) == expected_keys(2, 1)
    assert set(base) == expected_keys(42, 2)


def test_kuras_layer_profile_table_is_the_installed_layers(
    moss_env: EnvLocation, tiny_root: Path
) -> None:
    """``memory.LAYER_PROFILES`` (what a failure's diagnosis reads without the environment)
    equals what the installed VRAM layers set; the tiny DiT is read as a non-named shape."""
    from kura.backends.kohakumoss.memory import LAYER_PROFILES
    from kura.backends.kohakumoss.queries import compile_facts

    facts = compile_facts(moss_env, LayerChoice(source="folder", vram_layer="8g"), tiny_root)
    installed = {name: layer.profile for name, layer in facts.vram.items()}
    assert {k: v for k, v in installed.items() if k in LAYER_PROFILES} == dict(LAYER_PROFILES)
    assert facts.stack.vram_layer == "8g" and not facts.arch.is_named
    assert facts.knob_types["MAX_TOKENS"] == "int"
