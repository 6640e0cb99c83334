"""`kura doctor`: what this machine has for training, each finding with its fix.

It only looks: GPUs and driver, Docker and its GPU runtime, host RAM, free disk, whether a
Hugging Face token is present (never its value) and whether SkyPilot is installed and which
clouds ``sky check`` enables. What a trainer needs besides (its image, its environment) is
the backend's ``doctor`` verb (``kura doctor BACKEND``), which builds on the checks here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kura.backends.base import Finding, FindingStatus
from kura.nextsteps import NextStep, next_list
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.backends.base import DoctorReport, ImageRecipe

__all__ = [
    "DoctorResult",
    "Finding",
    "backend_doctor",
    "docker_findings",
    "docker_optional",
    "gpu_findings",
    "image_findings",
    "machine_findings",
    "run_doctor",
]

_TIMEOUT = 15


def _run(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def gpu_findings() -> list[Finding]:
    """The NVIDIA GPUs this machine has (a warning when none)."""
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


def docker_findings() -> list[Finding]:
    """Docker installed, its engine reachable, the NVIDIA runtime registered."""
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
    return findings


def image_findings(recipe: ImageRecipe, *, check: str, title: str, command: str) -> list[Finding]:
    """Whether ``recipe``'s image is built, at the release Kura compiles for. ``check`` names
    the finding, ``title`` the trainer, ``command`` the ``kura image build`` spelling."""
    from kura.errors import Unsupported
    from kura.images import image_release

    try:
        found = image_release(recipe.tag)
    except Unsupported as exc:
        return [Finding(check, "fail", exc.message, exc.hint or "")]
    if found is None:
        return [Finding(check, "fail", f"{recipe.tag} is not built", f"run `{command}`")]
    status: FindingStatus = "ok" if found == recipe.release else "fail"
    return [
        Finding(
            check,
            status,
            f"{recipe.tag}: {title} {found} (pinned {recipe.release})",
            "" if status == "ok" else f"rebuild it: `{command}`",
        )
    ]


def docker_optional(docker: list[Finding], host: list[Finding]) -> list[Finding]:
    """The Docker executor's failures as warnings when the trainer's host environment passed
    its checks (some ok, none failed; a missing environment is only a warning, so it does
    not count): the machine can run the trainer, by the host executor, so the doctor does
    not fail on a machine without Docker (CI's)."""
    if not any(f.status == "ok" for f in host) or any(f.status == "fail" for f in host):
        return docker
    return [
        f
        if f.status != "fail"
        else Finding(
            f.check,
            "warn",
            f"{f.detail} (the Docker executor cannot run here; the host executor can)",
            f.fix,
        )
        for f in docker
    ]


def checkout_finding(
    checkout: str, *, check: str, marker: Path, trainer: str, pinned: str, toml_key: str
) -> Finding:
    """The host executor's checkout that kura.toml's ``toml_key`` names: it must hold
    ``marker`` (a file or folder every checkout of ``trainer`` has, ``trainer`` spelled with
    its article: "a Musubi Tuner"); ``pinned`` is what Kura compiles for."""
    found = (Path(checkout) / marker).exists()
    return Finding(
        check,
        "ok" if found else "fail",
        f"{checkout} (host executor; Kura compiles for {pinned})"
        if found
        else f"{checkout} has no {marker}: not {trainer} checkout",
        "" if found else f"set {toml_key} in kura.toml to {trainer} checkout",
    )


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


_SKY_CHECK_TIMEOUT = 240
"""``sky check`` starts SkyPilot's local API server the first time (about 90 s here)."""


def _skypilot() -> Finding:
    """Whether SkyPilot is installed, and the clouds ``sky check -o json`` enables: its JSON
    is ``{workspace: {cloud: [capability…]}}``, enabled clouds only (SkyPilot 0.14.1,
    ``sky/check.py`` ``check``, printed by ``sky/client/cli/command.py`` ``check``)."""
    if shutil.which("sky") is None:
        return Finding("skypilot", "skip", "not installed", "pip install skypilot (for cloud runs)")
    fix = "set up a cloud's credentials (SkyPilot's installation docs), then run `sky check`"
    try:
        done = subprocess.run(
            ["sky", "check", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=_SKY_CHECK_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding("skypilot", "warn", f"installed; `sky check` did not answer ({exc})", fix)
    clouds = _enabled_clouds(done.stdout) if done.returncode == 0 else None
    if clouds is None:
        why = (done.stderr.strip().splitlines() or ["no JSON"])[-1][:200]
        return Finding("skypilot", "warn", f"installed; `sky check` failed: {why}", fix)
    if not clouds:
        return Finding("skypilot", "warn", "installed; `sky check` enables no cloud", fix)
    listed = ", ".join(f"{name} ({', '.join(caps)})" for name, caps in sorted(clouds.items()))
    return Finding("skypilot", "ok", f"enabled: {listed}")


def _enabled_clouds(text: str) -> dict[str, list[str]] | None:
    """Cloud → capabilities, over every SkyPilot workspace; None when it is not that JSON."""
    try:
        document = json.loads(text[text.find("{") :]) if "{" in text else None
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict):
        return None
    clouds: dict[str, set[str]] = {}
    for per_workspace in document.values():
        if not isinstance(per_workspace, dict):
            return None
        for cloud, caps in per_workspace.items():
            clouds.setdefault(str(cloud), set()).update(str(c) for c in caps or [])
    return {cloud: sorted(caps) for cloud, caps in clouds.items()}


def machine_findings(workspace: Workspace | None) -> list[Finding]:
    """Every check of this machine no trainer owns."""
    return [*gpu_findings(), *docker_findings(), *_host(workspace), _hf_token(), _skypilot()]


@dataclass(frozen=True)
class DoctorResult:
    """``kura doctor``: this machine's findings (``scope`` None), or with a backend
    (``scope`` its name) that trainer's setup and the plain ``details`` it adds (the
    environment it looked at, its image); ``ok`` is false when any finding failed."""

    findings: tuple[Finding, ...]
    scope: str | None = None
    details: Mapping[str, str] = field(default_factory=dict)
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "doctor"

    @property
    def ok(self) -> bool:
        return not any(f.status == "fail" for f in self.findings)

    def to_dict(self) -> dict[str, object]:
        document: dict[str, object] = {"kind": self.kind}
        if self.scope is not None:
            document["scope"] = self.scope
        document["ok"] = self.ok
        document.update(self.details)
        document["findings"] = [f.to_dict() for f in self.findings]
        document["next"] = next_list(*self.next)
        return document


def backend_doctor(report: DoctorReport) -> DoctorResult:
    """The result of ``kura doctor BACKEND`` of one backend's report (its ``next`` is the
    CLI's: each fix that is a command)."""
    return DoctorResult(findings=report.findings, scope=report.backend, details=report.details)


def run_doctor(workspace: Workspace | None) -> DoctorResult:
    """``kura doctor`` of this machine (each backend's setup is ``kura doctor BACKEND``,
    named under ``next``)."""
    from kura.backends.registry import backend_names

    return DoctorResult(
        findings=tuple(machine_findings(workspace)),
        next=tuple(
            NextStep(f"kura doctor {name}", f"the {name} setup") for name in backend_names()
        ),
    )
