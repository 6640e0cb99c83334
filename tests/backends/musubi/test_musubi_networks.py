"""Musubi's network modules built on Musubi's own DiTs (meta device), against the adapter
table's accepted and refused modules.

Runs with Musubi's environment when it is installed (``conftest.musubi_harness``; CI runs
it on every change). Otherwise opt-in (``KURA_MUSUBI_SRC`` = a Musubi Tuner v0.3.4
checkout's ``src``; ``torch``, ``accelerate`` and ``transformers`` (HiDream-O1's DiT is a
transformers model) must import, ``accelerate``, ``einops`` and ``easydict`` may live in
``KURA_MUSUBI_DEPS``)::

    pip install --target /tmp/musubi-deps --no-deps accelerate psutil easydict einops
    KURA_MUSUBI_SRC=/tmp/musubi/src KURA_MUSUBI_DEPS=/tmp/musubi-deps \\
        .venv/bin/pytest tests/backends/musubi/test_musubi_networks.py

``musubi_network_harness.py`` builds each architecture's DiT as Musubi's loader does (no
weights) and runs ``create_arch_network`` of the architecture's LoRA module, LoHa and
LoKr on it; and each estimator shape's DiT with its LoRA module, whose module count and
parameters per rank must be the estimator's (``kura/sizing/shapes.py``; issue 23 item 10).
``KURA_RECORD_SEMANTICS=1`` writes the result to ``semantics/networks.json``;
without Musubi, ``test_adapter_table_matches_recorded_networks`` pins the adapter table to
it: every module Kura accepts built there, every module Kura refuses raised.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from musubi_cases import CASES
from musubi_trainer_env import Harness

from kura.backends.musubi import ADAPTERS
from kura.sizing.shapes import MODEL_SHAPES, get_shape

HERE = Path(__file__).parent
RECORD_PATH = HERE / "semantics" / "networks.json"
RECORD = os.environ.get("KURA_RECORD_SEMANTICS") == "1"
LYCORIS = ("networks.loha", "networks.lokr")


SHAPE_BUILDS: dict[str, tuple[str, str | None]] = {
    "flux1-kontext-dev": ("flux_kontext", None),
    "flux2-dev": ("flux2", "dev"),
    "flux2-klein-9b": ("flux2", "klein-9b"),
    "flux2-klein-4b": ("flux2", "klein-4b"),
    "qwen-image": ("qwen_image", "original"),
    "qwen-image-2025-08": ("qwen_image", "original"),
    "zimage": ("zimage", None),
    "wan2.1-t2v-14b": ("wan", "t2v-14B"),
    "wan2.1-i2v-14b": ("wan", "i2v-14B"),
    "wan2.1-1.3b": ("wan", "t2v-1.3B"),
    "wan2.2-a14b": ("wan", "t2v-A14B"),
    "wan2.2-a14b-single": ("wan", "t2v-A14B"),
    "hunyuan-video": ("hunyuan_video", None),
    "hunyuan-video-1.5": ("hunyuan_video_1_5", "t2v"),
    "framepack": ("framepack", None),
    "kandinsky5-lite-video": ("kandinsky5", "k5-lite-t2v-5s-sd"),
    "kandinsky5-lite-image": ("kandinsky5", "k5-lite-t2i-hd"),
    "kandinsky5-pro-video": ("kandinsky5", "k5-pro-t2v-5s-sd"),
    "krea2": ("krea2", None),
    "ideogram4": ("ideogram4", None),
    "hidream-o1": ("hidream_o1", "full"),
}
"""The Musubi model version whose DiT each estimator shape describes (its LoRA counts are
checked against Musubi's own network). Wan 2.2 A14B trains one LoRA per expert, each the
shape of one 14B DiT."""
UNBUILT_SHAPES = {"wan2.2-ti2v-5b": "Wan2.2 TI2V-5B is not in Musubi 0.3.4's WAN_CONFIGS"}
PARAMS_TOLERANCE = 0.03
"""LoRA parameters per rank: the estimator's figure within 3 % of Musubi's network's."""


def plan() -> dict[str, Any]:
    """Per architecture: the model version of its first golden case, and every module Kura
    names for it (its LoRA module, the ones also accepted or refused, LoHa and LoKr); per
    estimator shape: the DiT to build and the architecture's LoRA module."""
    versions: dict[str, str | None] = {}
    for case in CASES:
        versions.setdefault(case.architecture, case.version)
    out: dict[str, Any] = {}
    for arch, adapter in ADAPTERS.items():
        modules = [adapter.network_module, *adapter.network_modules_also]
        modules += [m for m, _ in adapter.network_modules_refused]
        modules += [m for m in LYCORIS if m not in modules]
        out[arch] = {"version": versions[arch], "modules": modules}
    shapes = {
        shape: {"architecture": arch, "version": version, "module": ADAPTERS[arch].network_module}
        for shape, (arch, version) in SHAPE_BUILDS.items()
    }
    return {"architectures": out, "shapes": shapes}


def disagreements(results: dict[str, Any]) -> list[str]:
    """Where the adapter table and Musubi's own network builders disagree."""
    found: list[str] = []
    for arch, adapter in ADAPTERS.items():
        result = results.get(arch)
        if result is None:
            found.append(f"{arch}: no result")
            continue
        refused = {m for m, _ in adapter.network_modules_refused}
        accepted = {adapter.network_module, *adapter.network_modules_also}
        if "modules" not in result:
            # The DiT could not be built here (the reason is recorded): the table must
            # still refuse LoHa/LoKr explicitly rather than leave them unknown.
            if not result["dit"].startswith("not built: "):
                found.append(f"{arch}: neither modules nor a reason")
            if adapter.network_unchecked is None:
                found.append(f"{arch}: the DiT was not built, but the table claims it checked")
            if not set(LYCORIS) <= refused | accepted:
                found.append(f"{arch}: LoHa/LoKr neither accepted nor refused")
            continue
        if adapter.network_unchecked is not None:
            found.append(f"{arch}: the DiT builds now; drop network_unchecked from the table")
        for module, outcome in result["modules"].items():
            own = result["modules"].get(adapter.network_module, {}).get("lora_modules")
            if module in accepted and not (outcome["built"] and outcome["lora_modules"] == own):
                # LoHa/LoKr wrap the same modules as the architecture's LoRA
                found.append(f"{arch}: Kura accepts {module}, Musubi: {outcome} ({own} LoRA)")
            if module in refused and outcome["built"]:
                found.append(f"{arch}: Kura refuses {module}, but Musubi builds it")
            if module not in accepted | refused:
                found.append(f"{arch}: {module} is neither accepted nor refused by Kura")
    return found


def shape_disagreements(results: dict[str, Any]) -> list[str]:
    """Where Kura's estimator and Musubi's own network disagree on a shape's LoRA: module
    count exactly, parameters per rank within :data:`PARAMS_TOLERANCE`."""
    found: list[str] = []
    for shape, (arch, version) in SHAPE_BUILDS.items():
        result = results.get(shape)
        if result is None or "lora_modules" not in result:
            found.append(f"{shape}: Musubi's {arch} {version} network was not built: {result}")
            continue
        ours = get_shape(shape)
        if result["lora_modules"] != ours.lora_modules:
            found.append(
                f"{shape}: {result['lora_modules']} LoRA modules in Musubi, "
                f"{ours.lora_modules} in the estimator"
            )
        theirs = float(result["params_per_rank"])
        if abs(ours.lora_params_per_rank - theirs) > PARAMS_TOLERANCE * theirs:
            found.append(
                f"{shape}: {theirs:.4g} LoRA parameters per rank in Musubi, "
                f"{ours.lora_params_per_rank:.4g} in the estimator"
            )
    return found


def test_network_modules_build_where_kura_accepts_them(
    musubi_harness: Harness, tmp_path: Path
) -> None:
    h = musubi_harness
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan()), encoding="utf-8")
    completed = subprocess.run(
        [h.python, str(HERE / "musubi_network_harness.py"), h.source, str(plan_path)],
        capture_output=True,
        text=True,
        timeout=900,
        env=h.env,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    found = json.loads(completed.stdout)
    if RECORD:
        RECORD_PATH.parent.mkdir(exist_ok=True)
        record = {"musubi_release": "0.3.4", **found}
        RECORD_PATH.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    results = found["architectures"]
    unexpected = {a: r["trace"] for a, r in results.items() if "trace" in r}
    unexpected |= {s: r["trace"] for s, r in found["shapes"].items() if "trace" in r}
    assert not unexpected, unexpected
    assert not disagreements(results), disagreements(results)
    assert not shape_disagreements(found["shapes"]), shape_disagreements(found["shapes"])


def test_adapter_table_matches_recorded_networks() -> None:
    assert RECORD_PATH.is_file(), "run the opt-in test with KURA_RECORD_SEMANTICS=1"
    record = json.loads(RECORD_PATH.read_text(encoding="utf-8"))
    results = record["architectures"]
    assert set(results) == set(ADAPTERS)
    assert not disagreements(results), disagreements(results)


def test_estimator_lora_counts_match_recorded_networks() -> None:
    """Every estimator shape's LoRA modules and parameters per rank are Musubi's own."""
    shapes = json.loads(RECORD_PATH.read_text(encoding="utf-8"))["shapes"]
    assert set(shapes) == set(SHAPE_BUILDS)
    assert not shape_disagreements(shapes), shape_disagreements(shapes)


def test_every_estimator_shape_is_checked_or_says_why_not() -> None:
    assert set(SHAPE_BUILDS) | set(UNBUILT_SHAPES) == set(MODEL_SHAPES)
    assert not set(SHAPE_BUILDS) & set(UNBUILT_SHAPES)


def test_wan_14b_is_checked_at_its_real_shape() -> None:
    """wan/configs 14B: 40 blocks of 10 LoRA'd linears (not WanModel's 32-layer default)."""
    shapes = json.loads(RECORD_PATH.read_text(encoding="utf-8"))["shapes"]
    assert (
        shapes["wan2.1-t2v-14b"]["lora_modules"] == 400 == get_shape("wan2.1-t2v-14b").lora_modules
    )
    assert get_shape("wan2.1-t2v-14b").n_blocks == 40


def test_the_recording_covers_every_module_kura_names() -> None:
    results = json.loads(RECORD_PATH.read_text(encoding="utf-8"))["architectures"]
    for arch, entry in plan()["architectures"].items():
        if "modules" in results[arch]:
            assert set(entry["modules"]) <= set(results[arch]["modules"]), arch
