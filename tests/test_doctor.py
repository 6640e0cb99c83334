from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from kura.backends.registry import command_backend, get_backend
from kura.doctor import DoctorResult, backend_doctor, run_doctor
from kura.errors import Unsupported
from kura.images import build_image


def _fake_docker(folder: Path, *, runtimes: dict, labels: dict | None) -> None:
    script = folder / "docker"
    inspect = (
        f"echo '{json.dumps(labels)}'" if labels is not None else "echo 'no such image' >&2; exit 1"
    )
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f"  info) echo '{json.dumps(runtimes)}' ;;\n"
        f"  image) {inspect} ;;\n"
        "  *) exit 2 ;;\n"
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return folder


def _by_check(result: DoctorResult) -> dict[str, dict[str, str]]:
    return {f.check: f.to_dict() for f in result.findings}


def test_doctor_finds_image_at_the_pinned_release(fake_path: Path) -> None:
    _fake_docker(
        fake_path,
        runtimes={"runc": {}, "nvidia": {}},
        labels={"org.kura.musubi-release": "0.3.4"},
    )
    findings = _by_check(backend_doctor(command_backend("musubi").doctor(None)))
    assert findings["docker"]["status"] == "ok"
    assert "docker gpu" not in findings
    assert findings["musubi image"]["status"] == "ok"


def test_doctor_flags_a_stale_image_and_missing_gpu_runtime(
    fake_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no host environment: with one that passes, Docker's failures are only warnings
    monkeypatch.setenv("KURA_MUSUBI_ENV", str(fake_path / "no-musubi-env"))
    _fake_docker(fake_path, runtimes={"runc": {}}, labels={"org.kura.musubi-release": "0.3.1"})
    doc = backend_doctor(get_backend("musubi-tuner").doctor(None))
    findings = _by_check(doc)
    assert findings["docker gpu"]["status"] == "warn"
    assert findings["musubi image"]["status"] == "fail"
    assert "kura image build musubi" in findings["musubi image"]["fix"]
    assert doc.ok is False and doc.to_dict()["ok"] is False


def test_hf_token_presence_is_reported_never_its_value(
    fake_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_docker(fake_path, runtimes={"nvidia": {}}, labels=None)
    monkeypatch.setenv("HF_TOKEN", "hf_very_secret_value")
    doc = run_doctor(None)
    assert _by_check(doc)["hf token"]["detail"] == "present"
    assert "hf_very_secret_value" not in json.dumps(doc.to_dict())


def test_image_build_prints_the_exact_argv_with_the_release_label() -> None:
    doc = build_image(command_backend("musubi").image(None), run=False)
    argv = list(doc.argv)
    assert argv[:4] == ["docker", "build", "-t", "kura/musubi-tuner:0.3.4"]
    assert "org.kura.release=0.3.4" in argv
    assert "org.kura.backend=musubi-tuner" in argv
    assert Path(argv[argv.index("-f") + 1]).is_file()
    assert doc.ran is False and doc.exit_code is None


def test_ai_toolkit_builds_its_own_image_from_its_package() -> None:
    doc = build_image(get_backend("ai-toolkit").image(None), run=False)
    dockerfile = Path(doc.argv[doc.argv.index("-f") + 1])
    assert dockerfile.is_file() and "backends/aitoolkit" in dockerfile.as_posix()
    assert "org.kura.release=0.12.26" in doc.argv
    assert doc.image == "kura/ai-toolkit:0.12.26"


def test_a_backend_without_an_image_says_how_it_is_installed() -> None:
    with pytest.raises(Unsupported, match="no Docker image") as caught:
        get_backend("kohakumoss").image(None)
    assert "kura backend install kohakumoss" in (caught.value.hint or "")


def test_an_image_built_by_this_kura_is_read_back_at_its_release(fake_path: Path) -> None:
    _fake_docker(
        fake_path,
        runtimes={"nvidia": {}},
        labels={"org.kura.release": "0.12.26", "org.kura.backend": "ai-toolkit"},
    )
    findings = _by_check(backend_doctor(get_backend("ai-toolkit").doctor(None)))
    assert findings["ai-toolkit image"]["status"] == "ok"
    assert "AI-Toolkit 0.12.26" in findings["ai-toolkit image"]["detail"]


def test_the_machine_doctor_names_every_backends_doctor(fake_path: Path) -> None:
    _fake_docker(fake_path, runtimes={"nvidia": {}}, labels=None)
    doc = run_doctor(None)
    assert "musubi image" not in _by_check(doc)
    assert {step.command for step in doc.next} >= {
        "kura doctor musubi-tuner",
        "kura doctor ai-toolkit",
        "kura doctor kohakumoss",
    }


def test_a_host_checkout_kura_toml_names_must_be_the_trainers(
    fake_path: Path, tmp_path: Path
) -> None:
    """Musubi's scripts live under src/musubi_tuner/ and AI-Toolkit's entry is run.py at the
    checkout's root (both as the trainers' repositories lay them out)."""
    from kura.initialize import init_workspace

    _fake_docker(fake_path, runtimes={"nvidia": {}}, labels=None)
    workspace, _ = init_workspace(tmp_path / "ws")
    musubi, aitk = tmp_path / "musubi-tuner", tmp_path / "ai-toolkit"
    (musubi / "src" / "musubi_tuner").mkdir(parents=True)
    aitk.mkdir()
    config = workspace.config_path.read_text()
    workspace.config_path.write_text(
        config.replace(
            "[executor]",
            f'[executor]\nmusubi_checkout = "{musubi}"\naitk_checkout = "{aitk}"',
            1,
        )
    )
    assert (
        _by_check(backend_doctor(command_backend("musubi").doctor(workspace)))["musubi checkout"][
            "status"
        ]
        == "ok"
    )
    found = _by_check(backend_doctor(get_backend("ai-toolkit").doctor(workspace)))
    assert found["ai-toolkit checkout"]["status"] == "fail"
    assert "aitk_checkout" in found["ai-toolkit checkout"]["fix"]
    (aitk / "run.py").write_text("")
    found = _by_check(backend_doctor(get_backend("ai-toolkit").doctor(workspace)))
    assert found["ai-toolkit checkout"]["status"] == "ok"


def test_docker_is_optional_only_where_the_host_environment_runs_the_trainer() -> None:
    from kura.backends.base import Finding
    from kura.doctor import docker_optional

    docker = [Finding("docker", "fail", "no engine", "install Docker")]
    ready = [Finding("env", "ok", "there", ""), Finding("scripts", "warn", "4 of 36", "")]
    (softened,) = docker_optional(docker, ready)
    assert softened.status == "warn" and "the host executor can" in softened.detail
    missing = [Finding("env", "warn", "not installed (the docker executor needs none)", "")]
    broken = [Finding("env", "ok", "there", ""), Finding("torch", "fail", "no torch", "")]
    assert docker_optional(docker, missing) == docker
    assert docker_optional(docker, broken) == docker
    assert docker_optional(docker, []) == docker


def _fake_sky(folder: Path, body: str) -> None:
    script = folder / "sky"
    script.write_text(f'#!/bin/sh\n[ "$*" = "check -o json" ] || exit 9\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        # `sky check -o json` as SkyPilot 0.14.1 prints it (sky/check.py `check`), after
        # the API server's start-up lines on stderr.
        (
            "echo 'Starting a local server.' >&2\n"
            """echo '{"default": {"AWS": ["compute", "storage"], "GCP": ["storage"]}}'""",
            "ok",
            "enabled: AWS (compute, storage), GCP (storage)",
        ),
        ("""echo '{"default": {}}'""", "warn", "installed; `sky check` enables no cloud"),
        ("echo 'cannot reach the API server' >&2; exit 1", "warn", "cannot reach the API server"),
    ],
)
def test_doctor_reports_the_clouds_sky_check_enables(
    fake_path: Path, body: str, status: str, detail: str
) -> None:
    from kura.doctor import machine_findings

    _fake_sky(fake_path, body)
    [found] = [f for f in machine_findings(None) if f.check == "skypilot"]
    assert found.status == status
    assert detail in found.detail
    if status != "ok":
        assert "sky check" in found.fix
