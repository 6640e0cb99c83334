"""``kura doctor kohakumoss``: KohakuMoss's own doctor plus Kura's checks.

``kohakumoss-doctor --json FILE`` reports packages, devices and the kernel matrix, and its
``missing`` list; it has no check for the kohakuvault break and never reports a missing GPU.
Kura adds: the environment's location and Python, the kohakuvault pin, and GPU presence
(a CPU-only environment trains, slowly: the CI run does exactly that on a tiny model).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import DoctorReport, Finding
from kura.backends.kohakumoss.env import (
    INSTALL_SIZE,
    KOHAKUMOSS_VERSION,
    KOHAKUVAULT_PIN,
    EnvLocation,
    locate_env,
)

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = ["moss_doctor", "workspace_env"]

_TIMEOUT = 180


def _report(env: EnvLocation, findings: tuple[Finding, ...]) -> DoctorReport:
    """The report of one KohakuMoss environment: its folder, Python and how it was chosen
    go under ``details`` (the ``kura doctor kohakumoss`` document's keys)."""
    details = {"environment": str(env.path), "python": str(env.python), "source": env.source}
    return DoctorReport("kohakumoss", findings, details)


def workspace_env(workspace: Workspace | None) -> EnvLocation:
    """The KohakuMoss environment kura.toml (or the environment variable) points at."""
    if workspace is None:
        return locate_env()
    return locate_env(workspace.config().executor.kohakumoss_env, workspace.root)


def _packages(report: dict[str, object]) -> dict[str, str]:
    raw = report.get("packages")
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items() if v}
    return {}


def moss_doctor(env: EnvLocation) -> DoctorReport:
    where = Finding(
        "environment", "ok", f"{env.path} (chosen by {env.source}); python {env.python}"
    )
    if not env.present:
        return _report(
            env,
            (
                Finding(
                    "environment",
                    "fail",
                    f"no KohakuMoss environment at {env.path} (chosen by {env.source})",
                    f"kura backend install kohakumoss ({INSTALL_SIZE})",
                ),
            ),
        )
    findings = [where]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "doctor.json"
        try:
            done = subprocess.run(
                [str(env.tool("kohakumoss-doctor")), "--json", str(out)],
                capture_output=True,
                text=True,
                timeout=_TIMEOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            findings.append(
                Finding(
                    "kohakumoss-doctor",
                    "fail",
                    f"did not run: {err}",
                    "kura backend install kohakumoss --force",
                )
            )
            return _report(env, tuple(findings))
        if done.returncode != 0 or not out.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
            findings.append(
                Finding(
                    "kohakumoss-doctor",
                    "fail",
                    f"exit {done.returncode}: {tail[0]}",
                    "kura backend install kohakumoss --force",
                )
            )
            return _report(env, tuple(findings))
        report = json.loads(out.read_text(encoding="utf-8"))
    packages = _packages(report)
    from kura.backends.kohakumoss.queries import env_report

    # kohakumoss-doctor lists its dependencies, not itself: ask the environment.
    version = env_report(env).packages.get("kohakumoss") or ""
    findings.append(
        Finding(
            "kohakumoss",
            "ok" if version == KOHAKUMOSS_VERSION else "warn",
            f"kohakumoss {version or 'not found'} (Kura compiles for {KOHAKUMOSS_VERSION}); "
            f"torch {packages.get('torch', '?')}",
            "" if version == KOHAKUMOSS_VERSION else "kura backend install kohakumoss --force",
        )
    )
    vault = packages.get("kohakuvault", "")
    findings.append(
        Finding(
            "kohakuvault",
            "ok" if vault == KOHAKUVAULT_PIN else "fail",
            f"kohakuvault {vault or 'not found'}"
            + (
                ""
                if vault == KOHAKUVAULT_PIN
                else ": 1.x removed the read_range API KohakuMoss's catalog reader calls"
            ),
            ""
            if vault == KOHAKUVAULT_PIN
            else f"{env.python} -m pip install kohakuvault=={KOHAKUVAULT_PIN}",
        )
    )
    missing = report.get("missing")
    lacking = [str(m) for m in missing] if isinstance(missing, list) else []
    findings.append(
        Finding(
            "missing",
            "fail" if lacking else "ok",
            ", ".join(lacking) if lacking else "nothing (kohakumoss-doctor)",
            "see `kohakumoss-doctor` for the install command" if lacking else "",
        )
    )
    cuda = report.get("torch_cuda")
    devices = report.get("devices")
    gpu = bool(cuda) and bool(devices)
    findings.append(
        Finding(
            "gpu",
            "ok" if gpu else "warn",
            f"CUDA {cuda}"
            if gpu
            else "no GPU: KohakuMoss runs on the CPU (tiny models and tests only)",
            "" if gpu else "train real MOSS-Image runs on a CUDA host",
        )
    )
    return _report(env, tuple(findings))
