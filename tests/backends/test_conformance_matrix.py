"""The conformance matrix: every bundle × each backend that accepts it × each task it trains.

For each cell, the default draft (``kura run new`` with no ``--set``):

1. plans on a 24 GB and an 80 GB class, which compiles it (always; no trainer needed, but
   KohakuMoss plans only through its own environment and estimator);
2. passes the trainer's own check, where the trainer's environment is present: Musubi's
   argument parsers and dataset-config schema (``musubi/musubi_parse_harness.py``),
   AI-Toolkit's loader and config classes with no key they do not read and no value they
   override (``aitoolkit/aitk_harness.py``), KohakuMoss's ``config_problems`` (compile runs
   it; a blocking problem fails the cell's plan). One harness process per trainer checks
   every cell's files.

Environments: ``KURA_MUSUBI_ENV`` / ``KURA_AITK_ENV`` / ``KURA_KOHAKUMOSS_ENV`` (else their
default locations). The trainer's source: ``KURA_MUSUBI_SRC`` (else the ``musubi_tuner``
package installed in the environment) and ``KURA_AITK_SRC`` (else the checkout the
environment's ``kura-env.json`` records). Without them the trainer checks skip; under
``CI=true`` they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.backends.behaviour import check_compiled_folder
from tests.backends.conformance import (
    GPUS,
    MOSS_STANDIN,
    NEEDS_ENV,
    Cell,
    Planned,
    build_datasets,
    cells,
    plan_cell,
)
from tests.backends.trainer_required import missing

from kura.backends.trainer_env import EnvLocation, locate_env, read_env_record
from kura.initialize import init_workspace

HERE = Path(__file__).parent
ALL = cells()
PLANNED_HERE = [c for c in ALL if c.backend not in NEEDS_ENV]
MOSS = [c for c in ALL if c.backend == "kohakumoss"]


def _env(variable: str, default_name: str, trainer: str) -> EnvLocation:
    location = locate_env(
        variable=variable, toml_value=None, workspace_root=None, default_name=default_name
    )
    return _present(location, variable, trainer)


def _present(location: EnvLocation, variable: str, trainer: str) -> EnvLocation:
    if not location.present:
        missing(
            f"the {trainer} environment is not at {location.path}: run `kura backend install "
            f"{trainer}` or set {variable}"
        )
    return location


def _ids(values: list[Cell]) -> list[str]:
    return [cell.id for cell in values]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[Cell, Planned]:
    """Every cell that plans without a trainer, drafted and planned in one workspace."""
    root = tmp_path_factory.mktemp("matrix")
    workspace, _ = init_workspace(root / "ws")
    build_datasets(workspace, root / "incoming")
    keep = root / "compiled"
    return {cell: plan_cell(workspace, cell, keep, i) for i, cell in enumerate(PLANNED_HERE)}


def test_the_matrix_covers_every_trainer_and_task() -> None:
    backends = {cell.backend for cell in ALL}
    assert backends == {"musubi-tuner", "ai-toolkit", "kohakumoss"}
    assert {cell.task for cell in ALL} == {"character", "style", "concept", "paired-edit", "video"}
    # an edit model's only task is paired-edit on AI-Toolkit; Musubi's FLUX.2 takes both
    assert {c.task for c in ALL if c.bundle == "aitk-qwen-image-edit"} == {"paired-edit"}
    assert {c.task for c in ALL if c.bundle == "flux2-dev"} == {
        "character",
        "style",
        "concept",
        "paired-edit",
    }
    assert len(ALL) > 100


@pytest.mark.parametrize("cell", PLANNED_HERE, ids=_ids(PLANNED_HERE))
def test_the_default_draft_plans_and_compiles(cell: Cell, matrix: dict[Cell, Planned]) -> None:
    planned = matrix[cell]
    assert planned.errors == dict.fromkeys(GPUS), planned.errors
    assert planned.compiled is not None and (planned.compiled / "steps.json").is_file()


@pytest.mark.parametrize("cell", PLANNED_HERE, ids=_ids(PLANNED_HERE))
def test_the_default_draft_runs_argv_lists_and_writes_only_inside_its_run(
    cell: Cell, matrix: dict[Cell, Planned]
) -> None:
    """What the behaviour suite (``behaviour.py``) pins of one draft per backend, over
    every cell's compiled files: each step an argv list of strings, and a container that
    binds nothing writable outside the run folder."""
    compiled = matrix[cell].compiled
    assert compiled is not None, matrix[cell].errors
    check_compiled_folder(compiled)


# ---------------------------------------------------------------------------------------
# Musubi: its parsers and dataset-config schema, over every Musubi cell's compiled files


def _musubi_source(env: EnvLocation) -> str:
    if os.environ.get("KURA_MUSUBI_SRC"):
        return os.environ["KURA_MUSUBI_SRC"]
    found = subprocess.run(
        [
            str(env.python),
            "-c",
            "import musubi_tuner, pathlib; "
            "print(pathlib.Path(musubi_tuner.__file__).parent.parent)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if found.returncode != 0:
        missing(f"the environment {env.path} has no musubi_tuner package: {found.stderr[-300:]}")
    return found.stdout.strip()


@pytest.fixture(scope="module")
def musubi_results(
    matrix: dict[Cell, Planned], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    env = _env("KURA_MUSUBI_ENV", "musubi-tuner-0.3.4", "musubi")
    cases = tmp_path_factory.mktemp("musubi-cases")
    for cell, planned in matrix.items():
        if cell.backend != "musubi-tuner" or planned.compiled is None:
            continue
        folder = cases / cell.id
        folder.mkdir()
        (folder / "compiled.json").write_text((planned.compiled / "steps.json").read_text())
        if (planned.compiled / "dataset.toml").is_file():
            (folder / "dataset.toml").write_text((planned.compiled / "dataset.toml").read_text())
    done = subprocess.run(
        [
            str(env.python),
            str(HERE / "musubi" / "musubi_parse_harness.py"),
            _musubi_source(env),
            str(cases),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results: dict[str, str] = json.loads(done.stdout)
    return results


MUSUBI = [c for c in PLANNED_HERE if c.backend == "musubi-tuner"]


@pytest.mark.parametrize("cell", MUSUBI, ids=_ids(MUSUBI))
def test_musubi_parses_the_default_draft(
    cell: Cell, matrix: dict[Cell, Planned], musubi_results: dict[str, str]
) -> None:
    if matrix[cell].compiled is None:
        pytest.fail(f"{cell.id} did not compile: {matrix[cell].errors}", pytrace=False)
    mine = {k: v for k, v in musubi_results.items() if k.split(":", 1)[0] == cell.id}
    assert f"{cell.id}:train" in mine and f"{cell.id}:dataset.toml" in mine, sorted(mine)
    assert {k: v for k, v in mine.items() if v != "ok"} == {}


# ---------------------------------------------------------------------------------------
# AI-Toolkit: its loader and config classes read every key and keep every value


def _aitk_source(env: EnvLocation) -> str:
    if os.environ.get("KURA_AITK_SRC"):
        return os.environ["KURA_AITK_SRC"]
    record = read_env_record(env)
    if record is None or not record.checkout:
        missing(
            f"no AI-Toolkit checkout: {env.path} records none (kura-env.json); set "
            "KURA_AITK_SRC or run `kura backend install ai-toolkit --source DIR`"
        )
        raise AssertionError("unreachable")
    return record.checkout


@pytest.fixture(scope="module")
def aitk_jobs(
    matrix: dict[Cell, Planned], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, object]]:
    env = _env("KURA_AITK_ENV", "ai-toolkit-27a03a9", "ai-toolkit")
    folder = tmp_path_factory.mktemp("aitk-jobs")
    files = []
    for cell, planned in matrix.items():
        if cell.backend == "ai-toolkit" and planned.compiled is not None:
            path = folder / f"{cell.id}.yaml"
            path.write_text((planned.compiled / "aitk-job.yaml").read_text())
            files.append(str(path))
    done = subprocess.run(
        [str(env.python), str(HERE / "aitoolkit" / "aitk_harness.py"), _aitk_source(env), *files],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)
    assert report["build_lines_missing"] == [], "BaseSDTrainProcess builds configs differently"
    return {str(job["file"]).removesuffix(".yaml"): job for job in report["jobs"]}


AITK = [c for c in PLANNED_HERE if c.backend == "ai-toolkit"]


@pytest.mark.parametrize("cell", AITK, ids=_ids(AITK))
def test_ai_toolkit_reads_every_key_of_the_default_draft(
    cell: Cell, matrix: dict[Cell, Planned], aitk_jobs: dict[str, dict[str, object]]
) -> None:
    import yaml

    planned = matrix[cell]
    if planned.compiled is None:
        pytest.fail(f"{cell.id} did not compile: {planned.errors}", pytrace=False)
    job = aitk_jobs[cell.id]
    assert job["unread"] == []
    written = yaml.safe_load((planned.compiled / "aitk-job.yaml").read_text())
    process = written["config"]["process"][0]
    facts = job["facts"]
    assert isinstance(facts, dict)
    # nothing Kura wrote is overridden by the config classes
    assert facts["arch"] == process["model"]["arch"]
    assert facts["network_type"] == process["network"]["type"]
    assert facts["steps"] == process["train"]["steps"]
    assert facts["lr_is_float"] is True


# ---------------------------------------------------------------------------------------
# KohakuMoss: plans only through its environment; compile runs its config_problems


@pytest.fixture(scope="module")
def moss_matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[Cell, Planned]:
    from kura.backends.kohakumoss.env import locate_env as moss_env
    from kura.backends.kohakumoss.queries import build_tiny

    env = _present(moss_env(), "KURA_KOHAKUMOSS_ENV", "kohakumoss")

    previous = os.environ.get("KURA_KOHAKUMOSS_ENV")
    os.environ["KURA_KOHAKUMOSS_ENV"] = str(env.path)
    try:
        root = tmp_path_factory.mktemp("moss-matrix")
        weights = build_tiny(env, root / "weights")
        workspace, _ = init_workspace(root / "ws")
        build_datasets(workspace, root / "incoming")
        sets = (f"model.root={weights}", *MOSS_STANDIN)
        return {
            cell: plan_cell(workspace, cell, root / "compiled", i, sets)
            for i, cell in enumerate(MOSS)
        }
    finally:
        if previous is None:
            os.environ.pop("KURA_KOHAKUMOSS_ENV", None)
        else:
            os.environ["KURA_KOHAKUMOSS_ENV"] = previous


@pytest.mark.parametrize("cell", MOSS, ids=_ids(MOSS))
def test_kohakumoss_plans_and_accepts_the_default_draft(
    cell: Cell, moss_matrix: dict[Cell, Planned]
) -> None:
    planned = moss_matrix[cell]
    assert planned.errors == dict.fromkeys(GPUS), planned.errors
    assert planned.compiled is not None
    assert (planned.compiled / "kohakumoss" / "train.py").is_file()
    check_compiled_folder(planned.compiled)
    # the plan shows what KohakuMoss's composed config runs: its own recipe, drafted from its
    # own knowledge, departing from run.yaml only where it batches by tokens
    items = {item["item"]: item for item in planned.recipe["items"]}  # type: ignore[union-attr]
    assert items["optimizer"]["values"]["OPTIMIZER"] == "adamw"
    assert items["schedule"]["values"]["SCHEDULE"]["mode"] == "cosine"
    assert items["schedule"]["values"]["SCHEDULE"]["warmup"] == 100
    assert items["length"]["values"] == {"STEPS": 4000}
    assert planned.differences == ["batch"]


def test_a_missing_trainer_environment_fails_under_ci_and_skips_otherwise(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    absent = EnvLocation(tmp_path / "no-env", "KURA_MUSUBI_ENV")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and the musubi environment"):
        _present(absent, "KURA_MUSUBI_ENV", "musubi")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="set KURA_MUSUBI_ENV"):
        _present(absent, "KURA_MUSUBI_ENV", "musubi")
