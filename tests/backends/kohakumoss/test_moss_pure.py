"""The KohakuMoss backend's pure parts: no environment needed."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from kura.backends.kohakumoss.compile import (
    MossCompileInputs,
    MossDataset,
    MossModel,
    compile_moss,
    resume_step,
)
from kura.backends.kohakumoss.configfile import literal
from kura.backends.kohakumoss.diagnose import diagnose
from kura.backends.kohakumoss.env import (
    EnvLocation,
    HelperFailed,
    call_helper,
    install_commands,
    locate_env,
)
from kura.backends.kohakumoss.exportcheck import check_export, dit_linears
from kura.backends.kohakumoss.follow import read_progress
from kura.backends.kohakumoss.knobs import MossRecipe, knob_problems
from kura.backends.kohakumoss.memory import calibrate, host_ram
from kura.backends.kohakumoss.queries import LayerStack, MemoryEstimate, MossArch
from kura.errors import InvalidInput, NotFound, Unsupported

TYPES = {
    "LR": "float",
    "STEPS": "int",
    "MAX_TOKENS": "int",
    "PIN_MEMORY": "bool",
    "TUNE": "str",
    "CAPTION": "mapping",
    "SAMPLE_SIZE": "sequence",
    "METRICS_EVERY": "none",
}


def test_knob_types_are_checked_before_kohakumoss_sees_them() -> None:
    assert (
        knob_problems({"LR": 2e-4, "STEPS": 10, "SAMPLE_SIZE": (64, 64), "METRICS_EVERY": 5}, TYPES)
        == []
    )
    problems = knob_problems(
        {"LR": "fast", "STEPS": "100", "MAX_TOKENZ": 1, "PIN_MEMORY": 1, "lr": 1, "STEPS_": True},
        TYPES,
    )
    assert "LR: expects float, got str 'fast'" in problems
    assert "STEPS: expects int, got str '100'" in problems
    assert any(
        p.startswith("MAX_TOKENZ: unknown KohakuMoss knob (did you mean MAX_TOKENS")
        for p in problems
    )
    assert any(p.startswith("PIN_MEMORY: expects bool") for p in problems)
    assert any(p.startswith("lr: knob names are UPPER_CASE") for p in problems)
    assert knob_problems({"LR": float("nan")}, TYPES) == ["LR: nan is not a finite number"]
    assert knob_problems({"STEPS": True}, TYPES) == ["STEPS: expects int, got bool True"]


@pytest.mark.parametrize(
    "value", [1, 1.5e-4, "a'b\"c\n", None, True, (), (1,), [1, (2, 3)], {"a": {"b": [1.0]}}]
)
def test_literals_read_back_equal(value: object) -> None:
    assert ast.literal_eval(literal(value)) == value  # type: ignore[arg-type]


def _inputs(tmp_path: Path, **over: object) -> MossCompileInputs:
    stack = LayerStack(
        root=tmp_path / "bundle",
        train_script=tmp_path / "bundle/scripts/train/moss.py",
        data_scripts={
            n: tmp_path / f"bundle/scripts/data/{n}.py"
            for n in ("inspect_data", "cache_text", "cache_latents")
        },
        vram_layer="8g",
        layers=(
            tmp_path / "bundle/configs/moss/_base/base_lora.py",
            tmp_path / "bundle/configs/moss/algo/algo_lora.py",
        ),
        vram_layers=("8g",),
    )
    arch = MossArch(64, 2, 2, 128, 32, 1, 128, 32, ())
    recipe = MossRecipe(1e-4, 6, 4, 4.0, 0, 0, 1.0, 3, 3, ("kura, smile",), 1)
    types = {
        **TYPES,
        **dict.fromkeys(
            ("WEIGHTS", "VARIANT", "RUN_NAME", "OUTPUT_DIR", "CACHE_DIR", "TEXT_ENCODER", "VAE"),
            "str",
        ),
        "DATASETS": "sequence",
        "ARCH_OVERRIDES": "mapping",
        "DIM": "int",
        "ALPHA": "float",
        "SEED": "int",
        "SCHEDULE": "mapping",
        "SAVE_EVERY": "int",
        "SAMPLE_EVERY": "int",
        "LOG_EVERY": "int",
        "GRAD_CLIP": "float",
        "SAMPLE_PROMPTS": "sequence",
    }
    values: dict[str, object] = dict(  # noqa: C408 - keyword form mirrors the dataclass
        run_id="r1",
        run_dir=tmp_path / "run",
        env=EnvLocation(tmp_path / "env", "default"),
        stack=stack,
        model=MossModel(root=tmp_path / "weights", arch=arch),
        datasets=(MossDataset("kura", tmp_path / "ds", ".txt", 10, "kura"),),
        recipe=recipe,
        knob_types=types,
        overrides={"MAX_TOKENS": 512},
        device="cpu",
    )
    values.update(over)
    return MossCompileInputs(**values)  # type: ignore[arg-type]


def test_compile_writes_the_stack_kuras_knobs_and_four_commands(tmp_path: Path) -> None:
    compiled = compile_moss(_inputs(tmp_path))
    train = compiled.files["compiled/kohakumoss/train.py"]
    doc = ast.get_docstring(ast.parse(train)) or ""
    assert "scripts/train/moss.py" in doc
    tree = {
        n.targets[0].id: ast.literal_eval(n.value)
        for n in ast.parse(train).body
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
    }
    assert tree["ARCH_OVERRIDES"]["dim"] == 64 and tree["MAX_TOKENS"] == 512
    assert tree["DATASETS"] == [
        {"source": "folder", "path": (tmp_path / "ds").as_posix(), "txt_as": "tags", "weight": 10.0}
    ]
    assert tree["CACHE_DIR"] == (tmp_path / "run/cache").as_posix()
    assert tree["CAPTION"]["keep_first"] == 1
    assert [s.name for s in compiled.steps] == ["inspect", "cache_text", "cache_latents", "train"]
    assert all("FORCE_COLOR" not in s.env and s.env["NO_COLOR"] == "1" for s in compiled.steps)
    assert compiled.steps[-1].argv[-1] == str(compiled.train_config)
    assert resume_step(compiled.steps[-1]).argv[-2:] == ("--set", "RESUME=latest")
    data = compiled.files["compiled/kohakumoss/data.py"]
    assert "scripts/data/inspect_data.py" in (ast.get_docstring(ast.parse(data)) or "")
    assert "'device': 'cpu'" in data


def test_compile_refuses_bad_knobs_and_captions(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"run\.yaml backend\.config: MAX_TOKENS: expects int"):
        compile_moss(_inputs(tmp_path, overrides={"MAX_TOKENS": "big"}))
    with pytest.raises(InvalidInput, match="STEPS, WEIGHTS, which Kura writes"):
        compile_moss(_inputs(tmp_path, overrides={"WEIGHTS": "x", "STEPS": 3}))
    with pytest.raises(Unsupported, match=r"not \.cap"):
        compile_moss(_inputs(tmp_path, datasets=(MossDataset("d", tmp_path, ".cap", 1),)))


def test_progress_from_metrics_and_log(tmp_path: Path) -> None:
    rows = [
        {"step": s, "time": 1.0 + s, "loss": 1.0 / s, "lr": 1e-4, "step_time": 2.0}
        for s in (1, 2, 3)
    ]
    (tmp_path / "metrics.jsonl").write_text("\n".join(map(json.dumps, rows)) + '\n{"step": 4, "lo')
    (tmp_path / "log.txt").write_text("[x] [training.entry] [INFO] training from step 0 to 10\n")
    (tmp_path / "checkpoints/step_00000003").mkdir(parents=True)
    (tmp_path / "checkpoints/step_00000003/state.json").write_text("{}")
    (tmp_path / "checkpoints/step_00000006").mkdir()  # no state.json: half-written
    p = read_progress(tmp_path)
    assert (p.step, p.total, p.loss, p.eta_seconds, p.rows) == (3, 10, 1 / 3, 14, 3)
    assert p.last_checkpoint and p.last_checkpoint.endswith("step_00000003")


@pytest.mark.parametrize(
    ("rc", "tail", "kind"),
    [
        (1, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate", "oom"),
        (
            1,
            "kohakumoss_data.cache.settings.CacheMiss: 4 latents missing from the offline cache",
            "cache-miss",
        ),
        (
            1,
            "SystemExit: invalid configuration:\n  - unknown knob STEPZ (did you mean STEPS?)",
            "invalid-config",
        ),
        (1, "FloatingPointError: 3 non-finite steps in a row", "non-finite"),
        (1, "KeyError: 'checkpoint /w: missing [...] (414)'", "arch-mismatch"),
        (143, "", "killed"),
        (-9, "a warning: /x does not exist", "killed"),
        (1, "RuntimeError: something else", "failed"),
    ],
)
def test_diagnosis(rc: int, tail: str, kind: str) -> None:
    verdict = diagnose("train", rc, tail, checkpoint="/r/checkpoints/step_00000003")
    assert verdict.kind == kind and verdict.hint
    if kind == "invalid-config":
        assert "unknown knob STEPZ" in verdict.message
    if kind == "killed":
        assert "step_00000003" in verdict.message


def _dit(path: Path, fused: bool) -> Path:
    t: dict[str, np.ndarray] = {"shared_block_modulation.weight": np.zeros((384, 64), np.float32)}
    for i in range(2):
        if fused:
            t[f"layers.{i}.proj.qkv.weight"] = np.zeros((192, 64), np.float32)
        else:
            for m in "qkv":
                t[f"layers.{i}.proj.{m}.weight"] = np.zeros((64, 64), np.float32)
        t[f"layers.{i}.proj.o.weight"] = np.zeros((64, 64), np.float32)
    save_file(t, str(path))
    return path


def _lora(path: Path, modules: dict[str, tuple[int, int]], rank: int = 4) -> Path:
    t: dict[str, np.ndarray] = {}
    for name, (out, inp) in modules.items():
        t[f"lora_unet_{name}.lora_down.weight"] = np.zeros((rank, inp), np.float32)
        t[f"lora_unet_{name}.lora_up.weight"] = np.zeros((out, rank), np.float32)
        t[f"lora_unet_{name}.alpha"] = np.zeros((), np.float32)
    save_file(t, str(path), {"kohakumoss_format": "comfy"})
    return path


def test_export_keys_are_checked_against_the_dit(tmp_path: Path) -> None:
    split = dit_linears((_dit(tmp_path / "dit.safetensors", fused=False),))
    fused = dit_linears((_dit(tmp_path / "fused.safetensors", fused=True),))
    good = _lora(
        tmp_path / "a.safetensors", {"layers_0_proj_q": (64, 64), "layers_1_proj_o": (64, 64)}
    )
    assert check_export(good, split).ok and check_export(good, fused).ok
    qkv = _lora(tmp_path / "b.safetensors", {"layers_0_proj_qkv": (192, 64)})
    verdict = check_export(qkv, split)
    assert verdict.ok and verdict.fused_qkv
    bad = _lora(
        tmp_path / "c.safetensors", {"layers_7_proj_q": (64, 64), "layers_0_proj_o": (32, 64)}
    )
    problems = check_export(bad, split).problems
    assert "layers_7_proj_q: the DiT has no such linear" in problems
    assert any(p.startswith("layers_0_proj_o: down [4, 64] / up [32, 4]") for p in problems)


def test_env_location_and_install_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KURA_KOHAKUMOSS_ENV", raising=False)
    assert locate_env("envs/moss", tmp_path) == EnvLocation(
        (tmp_path / "envs/moss").resolve(), "kura.toml"
    )
    assert locate_env().source == "default"
    monkeypatch.setenv("KURA_KOHAKUMOSS_ENV", str(tmp_path / "x"))
    env = locate_env("ignored", tmp_path)
    assert env.source == "KURA_KOHAKUMOSS_ENV" and not env.present
    venv, torch, moss = install_commands(env, "/usr/bin/python3")
    assert venv == ("/usr/bin/python3", "-m", "venv", str(env.path))
    assert torch[-1] == "torch==2.13.0" and moss[-2:] == ("kohakumoss==0.1.0", "kohakuvault==0.9.0")
    with pytest.raises(NotFound, match="not installed at") as info:
        call_helper(env, "versions")
    assert "kura backend install kohakumoss" in info.value.hint


def test_helper_error_answers_become_kura_errors(tmp_path: Path) -> None:
    import subprocess

    python = tmp_path / "env/bin/python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    env = EnvLocation(tmp_path / "env", "default")

    def fake(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(
            argv, 0, '{"ok": false, "error": "x does not exist", "kind": "missing"}\n', ""
        )

    with pytest.raises(HelperFailed, match="x does not exist") as info:
        call_helper(env, "infer", {"weights": "x"}, runner=fake)
    assert info.value.kind == "missing"


def test_memory_calibration_and_host_ram() -> None:
    rows = (MemoryEstimate("balanced 8192", "balanced", 8192, 4000, 4192, 0, 10.55, {}),)
    [(cell, estimate)] = calibrate(rows)
    assert cell.profile == "balanced" and estimate == 10.55
    assert (
        host_ram(
            named_variant=True, full_ft=False, profile="minimal", text_encoder_at_build=True
        ).build_gib
        == 32.0
    )
    assert (
        host_ram(
            named_variant=True, full_ft=False, profile="minimal", text_encoder_at_build=False
        ).build_gib
        == 19.0
    )
    assert (
        host_ram(
            named_variant=False, full_ft=False, profile="minimal", text_encoder_at_build=True
        ).steps_gib
        is None
    )
