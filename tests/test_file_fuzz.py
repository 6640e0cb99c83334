"""Structure-aware fuzzing of every file Kura reads in a workspace and a run folder.

Each file of a planned, approved run (run.yaml, state.json, plan.json, approval.json,
notes.md, compiled/run.lock, compiled/steps.json, compiled/container.json, launch.json,
guard.json), of its workspace (kura.toml, dataset.yaml, inspection.json) and of a trainer
environment (kura-env.json) is damaged the ways a crash, an editor or a hostile hand
would: a value of another type at any depth, a key removed or added, huge integers, NaN,
deep nesting, truncation, bytes that are not UTF-8. Every reader of the file then either
answers or raises a :class:`~kura.errors.KuraError` (a clean error naming the file),
never another exception. The YAML parser's own text fuzzing is in tests/test_yamlio.py,
the safetensors header's in tests/models/test_header_fuzz.py, captions and media in
tests/dataset/test_robustness.py, a sweep's files in tests/sweep/test_sweep_file_fuzz.py;
this covers the files above them, bounded to seconds.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kura.backends.base import Step
from kura.backends.trainer_env import EnvLocation, EnvRecord, read_env_record, write_env_record
from kura.dataset.registry import list_datasets, load_inspection, read_dataset
from kura.errors import KuraError
from kura.execution.guard import Guard, read_guard, write_guard
from kura.execution.launch_spec import (
    LaunchRecord,
    LaunchSpec,
    load_launch_record,
    save_launch_record,
)
from kura.execution.state import new_state, read_state, write_state
from kura.runs.approval import approve_run, check_approval, read_lock
from kura.runs.evidence import chosen_checkpoint, evaluate_run
from kura.runs.following import list_runs, run_status
from kura.runs.new import create_run
from kura.runs.plan import plan_run, read_plan
from kura.runs.store import load_run
from kura.schema.compiled import ContainerSpec, StepsFile
from kura.schema.machine import read_machine_file
from kura.sweep.objective import ratings
from kura.web.views import run_file_html
from kura.workspace import Workspace
from tests.builders import character_workspace


@dataclass(frozen=True)
class Fuzzed:
    workspace: Workspace
    run_id: str

    @property
    def run_dir(self) -> Path:
        return self.workspace.run_dir(self.run_id)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KURA_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        ws = character_workspace(tmp_path_factory.mktemp("fuzz"))
        run_id = create_run(
            ws, datasets=["myaku"], base="flux2-klein-base-4b", now=datetime(2026, 12, 1, 9, 0)
        ).run_id
        plan_run(ws, run_id, gpu="rtx-4090")
        approve_run(ws, run_id)
        run_dir = ws.run_dir(run_id)
        write_state(run_dir, new_state(run_id, run_dir, "host", ["train"], []))
        save_launch_record(_launch_record(run_id, run_dir))
        write_guard(run_dir, Guard(argv=["python", "-c", "pass"], owner="sweep s1 trial 0"))
        write_env_record(
            _env(ws),
            EnvRecord(backend="musubi-tuner", release="0.3.4", checkout="/src", packages=["x==1"]),
        )
        (run_dir / "notes.md").write_text(
            "# Notes\n\n## 2026-12-01\n\n- rating: 4/5\n- chosen: epoch 3 (best)\n"
        )
        yield Fuzzed(ws, run_id)


def _launch_record(run_id: str, run_dir: Path) -> LaunchRecord:
    train = Step("train", ("python", "train.py"), {"A": "1"}, str(run_dir), kind="train")
    spec = LaunchSpec(
        run_id=run_id,
        run_dir=run_dir,
        steps=[train],
        executor="host",
        container=None,
        gpus=1,
        pass_env=[],
        skip_steps=[],
    )
    return LaunchRecord(spec, backend_config={"blocks_to_swap": 0}, backend="musubi-tuner")


def _env(workspace: Workspace) -> EnvLocation:
    folder = workspace.root / "envs" / "musubi"
    folder.mkdir(parents=True, exist_ok=True)
    return EnvLocation(folder, "test")


Reader = Callable[[Fuzzed], object]

READERS: dict[str, tuple[str, tuple[Reader, ...]]] = {
    "run.yaml": (
        "yaml",
        (lambda f: load_run(f.workspace, f.run_id), lambda f: list_runs(f.workspace)),
    ),
    "state.json": (
        "json",
        (
            lambda f: read_state(f.run_dir),
            lambda f: list_runs(f.workspace),
            lambda f: run_status(f.workspace, f.run_id),
        ),
    ),
    "plan.json": (
        "json",
        (lambda f: read_plan(f.workspace, f.run_id), lambda f: approve_run(f.workspace, f.run_id)),
    ),
    "approval.json": ("json", (lambda f: check_approval(f.workspace, f.run_id),)),
    "notes.md": (
        "text",
        (
            lambda f: chosen_checkpoint(f.workspace, f.run_id),
            lambda f: evaluate_run(f.workspace, f.run_id, rating=3, notes=None),
            lambda f: ratings(f.run_dir),
            lambda f: run_file_html(f.workspace, f.run_id, "notes.md"),
        ),
    ),
    "compiled/run.lock": ("json", (lambda f: read_lock(f.workspace, f.run_id),)),
    "compiled/steps.json": (
        "json",
        (lambda f: read_machine_file(StepsFile, f.run_dir / "compiled/steps.json", remedy="plan"),),
    ),
    "compiled/container.json": (
        "json",
        (
            lambda f: read_machine_file(
                ContainerSpec, f.run_dir / "compiled/container.json", remedy="plan"
            ),
        ),
    ),
    "launch.json": (
        "json",
        (lambda f: load_launch_record(f.run_dir), lambda f: run_status(f.workspace, f.run_id)),
    ),
    "guard.json": ("json", (lambda f: read_guard(f.run_dir),)),
    "/envs/musubi/kura-env.json": ("json", (lambda f: read_env_record(_env(f.workspace)),)),
    "/kura.toml": ("toml", (lambda f: f.workspace.config(),)),
    "/datasets/myaku/dataset.yaml": (
        "yaml",
        (lambda f: read_dataset(f.workspace, "myaku"), lambda f: list_datasets(f.workspace)),
    ),
    "/datasets/myaku/inspection.json": ("json", (lambda f: load_inspection(f.workspace, "myaku"),)),
}


def _snapshot(fuzzed: Fuzzed) -> dict[Path, bytes]:
    """Every file a reader may touch (approve and evaluate write): restored per example."""
    roots = [fuzzed.run_dir, fuzzed.workspace.dataset_dir("myaku")]
    files = [p for root in roots for p in root.rglob("*") if p.is_file() and "media" not in p.parts]
    env_record = _env(fuzzed.workspace).record_path
    return {p: p.read_bytes() for p in [*files, fuzzed.workspace.config_path, env_record]}


def _restore(fuzzed: Fuzzed, snapshot: dict[Path, bytes]) -> None:
    for path in set(_snapshot(fuzzed)) - set(snapshot):
        path.unlink()
    for path, data in snapshot.items():
        if path.read_bytes() != data:
            path.write_bytes(data)


def _path(fuzzed: Fuzzed, name: str) -> Path:
    return fuzzed.workspace.root / name[1:] if name.startswith("/") else fuzzed.run_dir / name


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.builds(lambda: 10**5000),  # built, not listed: hypothesis cannot print it
    st.sampled_from([-(2**63), 2**64, float("nan"), float("inf"), "", "\x00", "é" * 3]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def _mutated_data(draw: st.DrawFn, data: Any) -> Any:
    """``data`` with one change at a drawn depth: a value replaced, a key removed or added."""
    if isinstance(data, dict) and data and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(list(data)))
        action = draw(st.sampled_from(["into", "into", "replace", "delete", "add"]))
        changed = dict(data)
        if action == "into":
            changed[key] = draw(_mutated_data(data[key]))
        elif action == "replace":
            changed[key] = draw(_VALUES)
        elif action == "delete":
            del changed[key]
        else:
            changed[draw(st.text(min_size=1, max_size=8))] = draw(_VALUES)
        return changed
    if isinstance(data, list) and data and draw(st.integers(0, 3)):
        index = draw(st.integers(0, len(data) - 1))
        changed_list = list(data)
        changed_list[index] = draw(_mutated_data(data[index]))
        return changed_list
    return draw(_VALUES)


def _serialise(kind: str, data: Any) -> bytes | None:
    try:
        if kind == "json":
            return json.dumps(data).encode()
        if kind == "yaml":
            return yaml.safe_dump(data, allow_unicode=True).encode()
        if kind == "toml":
            return tomli_w.dumps(data).encode()
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return None


def _parsed(kind: str, original: bytes) -> Any:
    if kind == "json":
        return json.loads(original)
    if kind == "yaml":
        return yaml.safe_load(original)
    if kind == "toml":
        import tomllib

        return tomllib.loads(original.decode())
    return None


@st.composite
def _damaged(draw: st.DrawFn, kind: str, original: bytes) -> bytes:
    how = draw(
        st.sampled_from(["structure", "structure", "truncate", "bytes", "huge", "nesting", "text"])
    )
    if how == "structure" and kind != "text":
        written = _serialise(kind, draw(_mutated_data(_parsed(kind, original))))
        if written is not None:
            return written
    if how == "truncate":
        return original[: draw(st.integers(0, max(len(original) - 1, 0)))]
    if how == "bytes":
        at = draw(st.integers(0, len(original)))
        return original[:at] + draw(st.binary(min_size=1, max_size=8)) + original[at:]
    if how == "huge":  # a 5,000-digit number where a value starts
        at = original.find(b": ") + 2 if b": " in original else original.find(b"=") + 1
        return original[:at] + b"9" * 5000 + original[at:]
    if how == "nesting":
        depth = draw(st.integers(50, 3000))
        return ("[" * depth + "]" * depth).encode() if kind != "text" else b"> " * depth
    return draw(st.text(max_size=200)).encode("utf-8", errors="surrogatepass")


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_reader_answers_or_names_the_damage(fuzzed: Fuzzed, name: str) -> None:
    kind, readers = READERS[name]
    path = _path(fuzzed, name)
    original = path.read_bytes()
    snapshot = _snapshot(fuzzed)

    @settings(
        max_examples=25,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(_damaged(kind, original))
    def damaged_file(data: bytes) -> None:
        path.write_bytes(data)
        try:
            for read in readers:
                with contextlib.suppress(KuraError):
                    read(fuzzed)
        finally:
            _restore(fuzzed, snapshot)

    damaged_file()
