"""The docker executor: the exact `docker run` argv, and runs through a fake `docker`."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path

import pytest
from run_helpers import make_spec, wait_until

from kura.errors import Unsupported, UsageError
from kura.execution import DockerExecutor, cancel_run, launch, read_state, step_log
from kura.execution.executors.docker import docker_run_argv, gpus_argument
from kura.execution.launch_spec import ContainerSpec, Mount, Step

CONTAINER = ContainerSpec(
    image="ghcr.io/example/musubi:0.3.4",
    gpus="all",
    mounts=[
        Mount(source="/data/ds one", target="/workspace/dataset", read_only=True, purpose="test"),
        Mount(source="/models", target="/workspace/models", read_only=True, purpose="test"),
        Mount(source="/runs/r1/output", target="/workspace/output", read_only=False, purpose="t"),
    ],
    env={"HF_HUB_OFFLINE": "1"},
    workdir="/app/musubi-tuner",
)
STEP = Step(
    name="train",
    argv=["accelerate", "launch", "src/musubi_tuner/wan_train_network.py", "--dit", "/m/dit"],
    env={"PYTHONUNBUFFERED": "1"},
    cwd="/host/ignored",
)

FAKE_DOCKER = """#!{python}
import hashlib, json, os, sys, time
with open(os.environ["FAKE_DOCKER_RECORD"], "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1] == "run":
    names = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "-e"]
    if "HF_TOKEN" in names:
        token = os.environ.get("HF_TOKEN", "")
        print("container HF_TOKEN sha256=" + hashlib.sha256(token.encode()).hexdigest())
    print("epoch 1/1", flush=True)
    sys.stderr.write("\\rsteps:  50%|#####     | 1/2 [00:01<00:01,  1.00s/it, avr_loss=0.2]")
    sys.stderr.flush()
    if os.environ.get("FAKE_DOCKER_HANG"):
        time.sleep(600)
    sys.stderr.write("\\rsteps: 100%|##########| 2/2 [00:02<00:00,  1.00s/it, avr_loss=0.1]\\n")
"""


def test_run_argv_is_exact() -> None:
    argv = docker_run_argv(CONTAINER, STEP, run_id="r1", pass_env=["HF_TOKEN"], user="1000:1000")
    assert argv == [
        "docker", "run", "--rm",
        "--name", "kura-r1-train",
        "--gpus", "all",
        "--ipc=host",
        "-v", "/data/ds one:/workspace/dataset:ro",
        "-v", "/models:/workspace/models:ro",
        "-v", "/runs/r1/output:/workspace/output:rw",
        "-e", "HF_HUB_OFFLINE=1",
        "-e", "PYTHONUNBUFFERED=1",
        "-e", "HF_TOKEN",
        "-w", "/app/musubi-tuner",
        "--user", "1000:1000",
        "ghcr.io/example/musubi:0.3.4",
        "accelerate", "launch", "src/musubi_tuner/wan_train_network.py", "--dit", "/m/dit",
    ]  # fmt: skip


def test_no_user_flag_by_default() -> None:
    argv = docker_run_argv(CONTAINER, STEP, run_id="r1", pass_env=[])
    assert "--user" not in argv
    assert "HF_TOKEN" not in argv


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [("all", "all"), ("2", "2"), ("0,1", '"device=0,1"'), ("device=3", '"device=3"')],
)
def test_gpus_argument(gpus: str, expected: str) -> None:
    assert gpus_argument(gpus) == expected


def test_bad_gpus_refused() -> None:
    with pytest.raises(UsageError):
        gpus_argument("two")


def test_container_name_is_sanitised() -> None:
    step = Step("train", ["true"], {}, "/")
    argv = docker_run_argv(CONTAINER, step, run_id="my run/1", pass_env=[])
    assert argv[argv.index("--name") + 1] == "kura-my-run-1-train"


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "docker"
    script.write_text(FAKE_DOCKER.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    record = tmp_path / "docker-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DOCKER_RECORD", str(record))
    return record


def _calls(record: Path) -> list[list[str]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


def test_launch_through_fake_docker(
    tmp_path: Path, fake_docker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "hf_secret_value_123"
    monkeypatch.setenv("HF_TOKEN", secret)
    spec = make_spec(tmp_path, executor="docker", container=CONTAINER, pass_env=("HF_TOKEN",))
    state = launch(spec, foreground=True)
    assert state.status == "succeeded"
    assert state.steps[0].container == "kura-run1-train"
    calls = _calls(fake_docker)
    assert calls == [
        docker_run_argv(CONTAINER, spec.steps[0], run_id="run1", pass_env=["HF_TOKEN"])[1:]
    ]
    log = step_log(spec.run_dir, "train").read_text()
    assert "container HF_TOKEN sha256=" + hashlib.sha256(secret.encode()).hexdigest() in log
    assert "avr_loss=0.1" in log
    for path in spec.run_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert secret not in fake_docker.read_text()


def test_cancel_stops_the_container(
    tmp_path: Path, fake_docker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_DOCKER_HANG", "1")
    spec = make_spec(tmp_path, executor="docker", container=CONTAINER)
    launch(spec)
    wait_until(lambda: read_state(spec.run_dir).status == "training")
    wait_until(lambda: "avr_loss" in step_log(spec.run_dir, "train").read_text())
    state = cancel_run(spec.run_dir, grace=3)
    assert state.status == "cancelled"
    assert ["stop", "--time", "3", "kura-run1-train"] in _calls(fake_docker)


def test_docker_missing_is_unsupported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    spec = make_spec(tmp_path, executor="docker", container=CONTAINER)
    with pytest.raises(Unsupported, match="docker"):
        DockerExecutor().submit(spec)


def test_docker_needs_a_container(tmp_path: Path, fake_docker: Path) -> None:
    spec = make_spec(tmp_path, executor="docker")
    with pytest.raises(UsageError, match="no container"):
        DockerExecutor().submit(spec)
