"""`kura doctor`: what this machine has for training, each finding with its fix.

It only looks: GPUs and driver, Docker and its GPU runtime, the Musubi image and its
release, host RAM, free disk, whether a Hugging Face token is present (never its value) and
whether SkyPilot is installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kura.workspace import Workspace

__all__ = ["Finding", "run_doctor"]

_TIMEOUT = 15


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"check": self.check, "status": self.status, "detail": self.detail, "fix": self.fix}


def _run(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _gpus() -> list[Finding]:
    from kura.planning.detect import detect_gpus

    gpus = detect_gpus()
    if not gpus:
        return [
            Finding(
                "gpu",
                "warn",
                "no NVIDIA GPU found on this machine",
                "plan for another machine with --gpu CLASS, or use the skypilot executor",
            )
        ]
    return [
        Finding(
            f"gpu {g.index}",
            "ok",
            f"{g.name}, {g.memory_gib:.0f} GiB, driver {g.driver_version or '?'}"
            + (f", class {g.gpu_class}" if g.gpu_class else ", no catalog class"),
        )
        for g in gpus
    ]


def _docker(image: str, release: str) -> list[Finding]:
    if shutil.which("docker") is None:
        return [Finding("docker", "fail", "docker is not installed", "install Docker Engine")]
    info = _run(["docker", "info", "--format", "{{json .Runtimes}}"])
    if info is None or info.returncode != 0:
        detail = (info.stderr.strip().splitlines() or ["no answer"])[-1] if info else "no answer"
        return [
            Finding("docker", "fail", f"the Docker engine is not reachable: {detail}", "start it")
        ]
    runtimes = json.loads(info.stdout or "{}")
    findings = [Finding("docker", "ok", f"engine reachable; runtimes: {', '.join(runtimes)}")]
    if "nvidia" not in runtimes:
        findings.append(
            Finding(
                "docker gpu",
                "warn",
                "no nvidia runtime registered",
                "install the NVIDIA Container Toolkit and run `nvidia-ctk runtime configure`",
            )
        )
    from kura.images import image_release

    found = image_release(image)
    if found is None:
        findings.append(
            Finding(
                "musubi image", "fail", f"{image} is not built", "run `kura image build musubi`"
            )
        )
    else:
        status = "ok" if found == release else "fail"
        findings.append(
            Finding(
                "musubi image",
                status,
                f"{image}: Musubi {found} (pinned {release})",
                "" if status == "ok" else "rebuild it: `kura image build musubi`",
            )
        )
    return findings


def _host(workspace: Workspace | None) -> list[Finding]:
    from kura.planning.host import host_facts

    facts = host_facts(workspace.root if workspace else Path.cwd())
    ram = facts.ram_total_gib
    findings = [
        Finding(
            "host ram",
            "ok" if ram is None or ram >= 32 else "warn",
            f"{ram} GiB total, {facts.ram_available_gib} GiB available",
            "" if ram is None or ram >= 32 else "block swap and model loading want 32-64 GiB",
        ),
        Finding(
            "disk",
            "ok" if facts.disk_free_gib >= 100 else "warn",
            f"{facts.disk_free_gib:.0f} GiB free at {facts.disk_path}",
            "" if facts.disk_free_gib >= 100 else "models and caches need 50-150 GiB",
        ),
    ]
    return findings


def _hf_token() -> Finding:
    from huggingface_hub.constants import HF_TOKEN_PATH

    present = bool(os.environ.get("HF_TOKEN")) or Path(HF_TOKEN_PATH).is_file()
    return Finding(
        "hf token",
        "ok" if present else "warn",
        "present" if present else "absent (gated models cannot be downloaded)",
        "" if present else "set HF_TOKEN or run `hf auth login`",
    )


def _skypilot() -> Finding:
    if shutil.which("sky") is None:
        return Finding("skypilot", "skip", "not installed", "pip install skypilot (for cloud runs)")
    return Finding("skypilot", "ok", "installed")


def run_doctor(workspace: Workspace | None, *, only: str | None = None) -> dict[str, Any]:
    from kura.backends.musubi import MUSUBI_RELEASE

    image = (
        workspace.config().executor.musubi_image
        if workspace
        else f"kura/musubi-tuner:{MUSUBI_RELEASE}"
    )
    findings = _gpus() + _docker(image, MUSUBI_RELEASE)
    if only != "musubi":
        findings += [*_host(workspace), _hf_token(), _skypilot()]
    return {
        "kind": "doctor",
        "ok": not any(f.status == "fail" for f in findings),
        "findings": [f.to_dict() for f in findings],
    }
