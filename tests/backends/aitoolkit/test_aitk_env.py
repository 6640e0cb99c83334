"""AI-Toolkit's own environment: the checkout it is made from, the exact install commands
and record, and the host executor's interpreter and checkout in the compiled steps
(stand-ins from ``fakes.py``; the real environment is ``test_aitk_real_run.py``'s)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from aitk_cases import make_inputs, make_spec
from tests.backends.aitoolkit.fakes import fake_checkout, fake_env

from kura.backends.aitoolkit import backend as aitk_backend
from kura.backends.aitoolkit.compile import compile_run, job_for
from kura.backends.aitoolkit.env import (
    NO_DEPS_PINS,
    PINS,
    installed_checkout,
    validate_source,
    workspace_env,
)
from kura.backends.registry import get_backend
from kura.backends.trainer_env import read_env_record
from kura.errors import KuraError, SpecError
from kura.initialize import init_workspace
from kura.workspace import Workspace

BACKEND = get_backend("ai-toolkit")


@pytest.fixture
def env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "aitk-env"
    monkeypatch.setenv("KURA_AITK_ENV", str(path))
    return path


def _workspace(tmp_path: Path, executor: str = "") -> Workspace:
    workspace, _ = init_workspace(tmp_path / "ws")
    if executor:
        text = workspace.config_path.read_text()
        assert "[executor]" in text
        workspace.config_path.write_text(text.replace("[executor]", f"[executor]\n{executor}"))
    return workspace


# -- the source ----------------------------------------------------------------------------


def test_a_checkout_at_the_pinned_release_is_accepted_resolved(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path / "ai-toolkit")
    assert validate_source(tmp_path / "." / "ai-toolkit") == checkout.resolve()


def test_a_folder_without_run_py_is_not_a_checkout(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    with pytest.raises(KuraError, match=r"has no run\.py: not an AI-Toolkit checkout") as caught:
        validate_source(tmp_path / "other")
    assert caught.value.exit_code == 5  # invalid input: the folder given is not the trainer
    assert caught.value.path == str((tmp_path / "other").resolve())


def test_another_release_is_refused_naming_both(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path / "ai-toolkit", version="0.12.30")
    wanted = r"version 0\.12\.30; Kura compiles for 0\.12\.26"
    with pytest.raises(KuraError, match=wanted) as caught:
        validate_source(checkout)
    assert caught.value.exit_code == 7  # unsupported: a release Kura does not compile for
    assert "27a03a9" in caught.value.hint


# -- setup: the install commands and the record --------------------------------------------


def test_setup_from_a_source_lists_every_pin_and_the_record(
    tmp_path: Path, env_var: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(aitk_backend, "_has_gpu", lambda: False)
    checkout = fake_checkout(tmp_path / "ai-toolkit")
    setup = BACKEND.setup(None, python="/usr/bin/python3.11", source=checkout)
    python = str(env_var.resolve() / "bin" / "python")
    venv, everything, no_deps, triton = setup.install
    assert venv == ("/usr/bin/python3.11", "-m", "venv", str(env_var.resolve()))
    assert everything[:4] == (python, "-m", "pip", "install")
    assert everything[-len(PINS) :] == tuple(p.requirement for p in PINS)
    assert "torch==2.14.1" in everything and "diffusers==0.39.0" in everything
    assert no_deps[-2:] == ("--no-deps", "torchaudio==2.11.1")
    assert triton == (python, "-m", "pip", "uninstall", "-y", "triton")
    assert setup.checkout == checkout.resolve() and setup.path == env_var.resolve()
    assert setup.record is not None and setup.record.checkout == str(checkout.resolve())
    assert setup.record.release == "0.12.26"
    assert setup.record.packages == [p.requirement for p in (*PINS, *NO_DEPS_PINS)]
    assert all(p.reason for p in (*PINS, *NO_DEPS_PINS))


def test_with_a_gpu_triton_stays(
    tmp_path: Path, env_var: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(aitk_backend, "_has_gpu", lambda: True)
    setup = BACKEND.setup(None, source=fake_checkout(tmp_path / "ai-toolkit"))
    assert len(setup.install) == 3 and not any("triton" in argv for argv in setup.install)
    assert setup.install[0][0] == sys.executable


def test_kura_toml_names_the_default_source_relative_to_the_workspace(
    tmp_path: Path, env_var: Path
) -> None:
    workspace = _workspace(tmp_path, 'aitk_checkout = "../ai-toolkit"')
    fake_checkout(tmp_path / "ai-toolkit")
    setup = BACKEND.setup(workspace)
    assert setup.checkout == (tmp_path / "ai-toolkit").resolve() and setup.install


def test_a_kura_toml_checkout_that_is_not_one_is_reported_not_raised(
    tmp_path: Path, env_var: Path
) -> None:
    """``kura backend list`` calls setup for every backend: a wrong kura.toml checkout is
    said in ``how`` (an explicit --source that is wrong still stops the setup)."""
    workspace = _workspace(tmp_path, 'aitk_checkout = "../not-a-checkout"')
    (tmp_path / "not-a-checkout").mkdir()
    setup = BACKEND.setup(workspace)
    assert setup.install == () and setup.needs_source
    assert "kura.toml's executor.aitk_checkout" in setup.how
    assert "not an AI-Toolkit checkout" in setup.how


def test_without_a_source_nothing_is_installed_and_it_says_how(env_var: Path) -> None:
    setup = BACKEND.setup(None)
    assert setup.install == () and setup.record is None
    assert "--source DIR" in setup.how and "kura image build ai-toolkit" in setup.how
    assert setup.present is False


def test_a_wrong_source_stops_the_setup(tmp_path: Path, env_var: Path) -> None:
    with pytest.raises(KuraError, match="not an AI-Toolkit checkout"):
        BACKEND.setup(None, source=tmp_path)


def test_the_cli_install_without_a_source_asks_for_one(kura, env_var: Path) -> None:
    result = kura("backend", "install", "ai-toolkit", "--json")
    assert result.exit_code != 0
    assert "--source DIR" in result.json()["error"]["hint"]
    assert not env_var.exists()


def test_present_means_installed_by_kura_for_ai_toolkit(tmp_path: Path, env_var: Path) -> None:
    fake_env(env_var, None)
    assert BACKEND.setup(None).present is False  # a Python, but no record
    checkout = fake_checkout(tmp_path / "ai-toolkit")
    fake_env(tmp_path / "recorded", checkout)
    (env_var / "kura-env.json").write_bytes((tmp_path / "recorded" / "kura-env.json").read_bytes())
    assert BACKEND.setup(None).present is True
    record = read_env_record(workspace_env(None))
    assert record is not None and record.checkout == str(checkout.resolve())
    (env_var / "kura-env.json").write_text("{not json")
    assert BACKEND.setup(None).present is False  # a damaged record is not an install


# -- the host executor: which Python, which checkout ---------------------------------------


def test_the_host_executor_needs_the_environment(tmp_path: Path, env_var: Path) -> None:
    workspace = _workspace(tmp_path)
    with pytest.raises(SpecError, match="not installed at") as caught:
        BACKEND.trainer_dir(workspace, in_container=False)
    assert "kura backend install ai-toolkit --source DIR" in caught.value.hint
    assert BACKEND.trainer_dir(workspace, in_container=True) == "/opt/ai-toolkit"
    assert BACKEND.trainer_bin(workspace, in_container=True) is None


def test_an_environment_kura_did_not_install_is_refused(tmp_path: Path, env_var: Path) -> None:
    fake_env(env_var, None)
    with pytest.raises(SpecError, match=r"no kura-env\.json naming its checkout"):
        installed_checkout(workspace_env(None))


def test_a_vanished_checkout_is_named(tmp_path: Path, env_var: Path) -> None:
    checkout = fake_checkout(tmp_path / "ai-toolkit")
    fake_env(env_var, checkout)
    (checkout / "run.py").unlink()
    with pytest.raises(SpecError, match=r"gone or changed.*has no run\.py"):
        installed_checkout(workspace_env(None))


def test_the_host_executor_runs_the_recorded_checkout_with_the_env_python(
    tmp_path: Path, env_var: Path
) -> None:
    checkout = fake_checkout(tmp_path / "ai-toolkit")
    fake_env(env_var, checkout)
    workspace = _workspace(tmp_path)
    assert BACKEND.trainer_dir(workspace, in_container=False) == str(checkout.resolve())
    assert BACKEND.trainer_bin(workspace, in_container=False) == str(env_var.resolve() / "bin")


def test_compile_names_the_env_python_in_both_steps_and_writes_no_bytecode() -> None:
    inputs = make_inputs()
    inputs = type(inputs)(**{**inputs.__dict__, "trainer_bin": "/envs/aitk/bin"})
    prepare, train = compile_run(make_spec(), inputs).steps
    assert prepare.argv[0] == train.argv[0] == "/envs/aitk/bin/python"
    assert train.argv[1] == "run.py" and train.cwd == "/opt/ai-toolkit"
    assert train.env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert "HF_HUB_OFFLINE" not in train.env  # AI-Toolkit fetches by repository id by default
    image_train = compile_run(make_spec(), make_inputs()).steps[1]
    assert image_train.argv[0] == "python"  # the image's PATH


def test_the_cpu_knobs_reach_the_job_and_the_step() -> None:
    spec = make_spec(config={"dtype": "fp32", "offline": True})
    job, _ = job_for(spec, make_inputs())
    assert job.config.process[0].train.dtype == "fp32"
    train = compile_run(spec, make_inputs()).steps[1]
    assert train.env["HF_HUB_OFFLINE"] == train.env["TRANSFORMERS_OFFLINE"] == "1"
    assert job_for(make_spec(), make_inputs())[0].config.process[0].train.dtype == "bf16"


def test_a_wrong_dtype_is_refused_by_name() -> None:
    with pytest.raises(SpecError, match=r"backend\.config\.dtype"):
        job_for(make_spec(config={"dtype": "float32"}), make_inputs())
