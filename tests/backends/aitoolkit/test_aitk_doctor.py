"""``kura doctor ai-toolkit`` on the host executor's environment, checked the way a job
uses it: its record and checkout, then the probe run with its Python from the checkout
(torch, and every extension through ``get_all_extensions``). Stand-in environments and
checkouts from ``fakes.py``; each verdict is one a broken environment really gives."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.backends.aitoolkit.fakes import fake_checkout, fake_env

from kura.backends.aitoolkit.backend import BACKEND
from kura.backends.aitoolkit.doctor import env_findings
from kura.backends.base import Finding
from kura.backends.trainer_env import EnvLocation


@pytest.fixture
def env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "aitk-env"
    monkeypatch.setenv("KURA_AITK_ENV", str(path))
    return path


def _checks(findings: list[Finding]) -> dict[str, Finding]:
    return {f.check: f for f in findings}


def _doctor(location: Path) -> dict[str, Finding]:
    found, _ = env_findings(EnvLocation(location, "test"), runner=subprocess.run)
    return _checks(found)


EXTENSIONS = """\
class _E:
    def __init__(self, uid):
        self.uid = uid

def get_all_extensions():
    return [_E("sd_trainer"), _E("diffusion_trainer"), _E("concept_slider")]
"""


def test_no_environment_is_a_warning_with_the_install_command(tmp_path: Path) -> None:
    found = _doctor(tmp_path / "none")
    assert found["ai-toolkit env"].status == "warn"
    assert "kura backend install ai-toolkit --source DIR" in found["ai-toolkit env"].fix


def test_an_environment_without_a_record_fails(tmp_path: Path) -> None:
    found = _doctor(fake_env(tmp_path / "env", None))
    assert found["ai-toolkit env"].status == "fail"
    assert "ai-toolkit python" not in found


def test_a_healthy_environment_passes_every_check(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path / "ai-toolkit", extension=EXTENSIONS)
    found = _doctor(fake_env(tmp_path / "env", checkout))
    assert {k: f.status for k, f in found.items()} == {
        "ai-toolkit env": "ok",
        "ai-toolkit source": "ok",
        "ai-toolkit python": "ok",
        "ai-toolkit torch": "ok",
        "ai-toolkit extensions": "ok",
    }
    assert found["ai-toolkit extensions"].detail == "3 extension processes import"
    assert "2.14.1" in found["ai-toolkit torch"].detail
    assert not list(checkout.rglob("__pycache__"))  # the probe writes nothing into it


def test_torch_that_does_not_import_fails_with_its_error(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path / "ai-toolkit", torch="raise ImportError('libcuda')\n")
    found = _doctor(fake_env(tmp_path / "env", checkout))
    assert found["ai-toolkit torch"].status == "fail"
    assert "libcuda" in found["ai-toolkit torch"].detail
    assert "--force" in found["ai-toolkit torch"].fix


def test_one_broken_extension_fails_the_doctor_naming_it(tmp_path: Path) -> None:
    broken = "def get_all_extensions():\n    import omnigen2_kernels\n"
    checkout = fake_checkout(tmp_path / "ai-toolkit", extension=broken)
    found = _doctor(fake_env(tmp_path / "env", checkout))
    failed = found["ai-toolkit extensions"]
    assert failed.status == "fail" and "omnigen2_kernels" in failed.detail
    assert "no AI-Toolkit job can start" in failed.detail


def test_extensions_without_the_trainers_fail(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path / "ai-toolkit")  # get_all_extensions() == []
    found = _doctor(fake_env(tmp_path / "env", checkout))
    assert found["ai-toolkit extensions"].status == "fail"
    assert "sd_trainer" in found["ai-toolkit extensions"].detail


def test_another_torch_is_a_warning(tmp_path: Path) -> None:
    checkout = fake_checkout(
        tmp_path / "ai-toolkit", torch='__version__ = "2.9.0"\n', extension=EXTENSIONS
    )
    found = _doctor(fake_env(tmp_path / "env", checkout))
    assert found["ai-toolkit torch"].status == "warn"
    assert "Kura installs 2.14.1" in found["ai-toolkit torch"].detail


def test_a_python_that_does_not_run_fails(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path / "ai-toolkit", extension=EXTENSIONS)
    found = _doctor(fake_env(tmp_path / "env", checkout, python="/bin/false"))
    assert found["ai-toolkit python"].status == "fail"


def test_docker_is_optional_where_the_host_environment_works(
    tmp_path: Path, env_var: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kura.doctor

    no_docker = [Finding("docker", "fail", "docker is not installed", "install Docker Engine")]
    monkeypatch.setattr(kura.doctor, "docker_findings", lambda: list(no_docker))
    monkeypatch.setattr(kura.doctor, "gpu_findings", list)
    report = BACKEND.doctor(None)
    assert _checks(list(report.findings))["docker"].status == "fail" and not report.ok
    fake_env(env_var, fake_checkout(tmp_path / "ai-toolkit", extension=EXTENSIONS))
    report = BACKEND.doctor(None)
    docker = _checks(list(report.findings))["docker"]
    assert docker.status == "warn" and "the host executor can" in docker.detail and report.ok
    assert report.details["checkout"] == str((tmp_path / "ai-toolkit").resolve())
