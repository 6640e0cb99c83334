"""`kura demo` walks the real commands; each step's exit code is what a user would see."""

from __future__ import annotations

from pathlib import Path

import pytest

from kura.demo import MARKER


@pytest.fixture(autouse=True)
def _no_trainers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The demo as a fresh machine's quick start 1 runs it: no trainer environment yet
    (tests/backends/*/test_*demo* walk the demo's real trainings)."""
    for variable in ("KURA_KOHAKUMOSS_ENV", "KURA_MUSUBI_ENV", "KURA_AITK_ENV"):
        monkeypatch.setenv(variable, str(tmp_path / f"no-env-{variable}"))


def test_demo_walks_the_path_and_reports_every_step(kura, tmp_path: Path) -> None:
    result = kura("demo", tmp_path / "demo", "--json")
    assert result.exit_code == 0, result.stderr[-2000:]
    document = result.json()
    assert document["kind"] == "demo"
    steps = [(s["argv"][0:2], s["exit_code"]) for s in document["steps"]]
    assert (["dataset", "validate"], 1) in steps, "the deliberate problems must fail validation"
    assert steps[-1][1] == 0
    validations = [s for s in document["steps"] if s["argv"][:2] == ["dataset", "validate"]]
    assert [s["exit_code"] for s in validations] == [1, 0]
    by_command = {tuple(s["argv"][:2]): s["exit_code"] for s in document["steps"]}
    assert by_command[("run", "approve")] == 0
    refusals = [s for s in document["steps"] if s["argv"][:2] == ["model", "check"]]
    assert [s["exit_code"] for s in refusals] == [1, 0], "the FLUX.1 AE is refused as FLUX.2 VAE"
    workspace = Path(document["workspace"])
    (run_dir,) = (workspace / "runs").iterdir()
    assert (run_dir / "plan.md").is_file()
    assert (run_dir / "approval.json").is_file()
    assert (workspace / "datasets" / "myaku" / "dataset.yaml").is_file()
    assert (workspace / "datasets" / "bw-edit" / "control").is_dir()
    assert document["trainers"] == {
        "trained": [],
        "not_installed": ["kohakumoss", "ai-toolkit", "musubi-tuner"],
        "failed": [],
    }


def test_demo_refuses_a_folder_that_is_not_an_earlier_demo(kura, tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "precious.txt").write_text("keep")
    result = kura("demo", tmp_path / "mine", "--json")
    assert result.exit_code == 2
    assert (tmp_path / "mine" / "precious.txt").read_text() == "keep"


def test_demo_rebuilds_an_earlier_demo(kura, tmp_path: Path) -> None:
    assert kura("demo", tmp_path / "d", "--json").exit_code == 0
    assert (tmp_path / "d" / MARKER).exists()
    assert kura("demo", tmp_path / "d", "--json").exit_code == 0


def test_the_demo_run_passes_the_launch_check_with_an_empty_digest_cache(
    kura, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in model files are named by their content, so a launch check that must
    re-hash them (no digest remembered: another machine, a cleared cache) finds each file
    the approved one instead of refusing the demo's own run (issue 27)."""
    from kura.execution.modelcheck import changed_model_file

    result = kura("demo", tmp_path / "demo", "--json")
    assert result.exit_code == 0, result.stderr[-2000:]
    workspace = Path(result.json()["workspace"])
    (run_dir,) = (workspace / "runs").iterdir()
    monkeypatch.setenv("KURA_CACHE_DIR", str(tmp_path / "empty-cache"))
    assert changed_model_file(run_dir, run_dir.name) is None
    remembered = tmp_path / "empty-cache" / "digests.sqlite3"
    assert remembered.is_file(), "the check hashed the files (nothing was remembered)"
