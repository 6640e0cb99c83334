"""Musubi's network modules built on Musubi's own DiTs (meta device), against the adapter
table's accepted and refused modules.

Runs with Musubi's environment when it is installed (``conftest.musubi_harness``; CI runs
it on every change). Otherwise opt-in (``KURA_MUSUBI_SRC`` = a Musubi Tuner v0.3.4
checkout's ``src``; ``torch`` and ``accelerate`` must import, ``accelerate``, ``einops`` and
``easydict`` may live in ``KURA_MUSUBI_DEPS``)::

    pip install --target /tmp/musubi-deps --no-deps accelerate psutil easydict einops
    KURA_MUSUBI_SRC=/tmp/musubi/src KURA_MUSUBI_DEPS=/tmp/musubi-deps \\
        .venv/bin/pytest tests/backends/musubi/test_musubi_networks.py

``musubi_network_harness.py`` builds each architecture's DiT as Musubi's loader does (no
weights) and runs ``create_arch_network`` of the architecture's LoRA module, LoHa and
LoKr on it. ``KURA_RECORD_SEMANTICS=1`` writes the result to ``semantics/networks.json``;
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

HERE = Path(__file__).parent
RECORD_PATH = HERE / "semantics" / "networks.json"
RECORD = os.environ.get("KURA_RECORD_SEMANTICS") == "1"
LYCORIS = ("networks.loha", "networks.lokr")


def plan() -> dict[str, Any]:
    """Per architecture: the model version of its first golden case, and every module Kura
    names for it (its LoRA module, the ones also accepted or refused, LoHa and LoKr)."""
    versions: dict[str, str | None] = {}
    for case in CASES:
        versions.setdefault(case.architecture, case.version)
    out: dict[str, Any] = {}
    for arch, adapter in ADAPTERS.items():
        modules = [adapter.network_module, *adapter.network_modules_also]
        modules += [m for m, _ in adapter.network_modules_refused]
        modules += [m for m in LYCORIS if m not in modules]
        out[arch] = {"version": versions[arch], "modules": modules}
    return out


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
            if module in accepted and not (outcome["built"] and outcome["lora_modules"] > 0):
                found.append(f"{arch}: Kura accepts {module}, Musubi: {outcome}")
            if module in refused and outcome["built"]:
                found.append(f"{arch}: Kura refuses {module}, but Musubi builds it")
            if module not in accepted | refused:
                found.append(f"{arch}: {module} is neither accepted nor refused by Kura")
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
    results = json.loads(completed.stdout)
    if RECORD:
        RECORD_PATH.parent.mkdir(exist_ok=True)
        record = {"musubi_release": "0.3.4", "architectures": results}
        RECORD_PATH.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    unexpected = {a: r["trace"] for a, r in results.items() if "trace" in r}
    assert not unexpected, unexpected
    assert not disagreements(results), disagreements(results)


def test_adapter_table_matches_recorded_networks() -> None:
    assert RECORD_PATH.is_file(), "run the opt-in test with KURA_RECORD_SEMANTICS=1"
    record = json.loads(RECORD_PATH.read_text(encoding="utf-8"))
    results = record["architectures"]
    assert set(results) == set(ADAPTERS)
    assert not disagreements(results), disagreements(results)


def test_the_recording_covers_every_module_kura_names() -> None:
    results = json.loads(RECORD_PATH.read_text(encoding="utf-8"))["architectures"]
    for arch, entry in plan().items():
        if "modules" in results[arch]:
            assert set(entry["modules"]) <= set(results[arch]["modules"]), arch
