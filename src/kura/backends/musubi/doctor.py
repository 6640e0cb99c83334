"""``kura doctor musubi``'s host findings: what Musubi's host executor needs on this machine
(the GPUs, Docker and the image are :class:`kura.backends.standard.CheckoutBackend`'s).

The host executor: Musubi's own environment (``kura backend install musubi``), checked the
way a run uses it: its ``kura-env.json``, the checkout it names, the packages at their pins,
``musubi-tuner`` installed from that checkout, and every entry script Kura's adapters run,
imported by path from the checkout with the environment's Python (an architecture whose
scripts cannot import here — Wan on a machine without a GPU — is named).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kura.backends.base import Finding
from kura.backends.musubi.adapters import ADAPTERS, MUSUBI_RELEASE
from kura.backends.musubi.env import (
    CHECKOUT_MARKER,
    INSTALL_SIZE,
    PINS,
    REMOVED,
    host_trainer,
    musubi_env,
)
from kura.errors import KuraError

if TYPE_CHECKING:
    from kura.backends.musubi.env import HostTrainer
    from kura.workspace import Workspace

__all__ = ["CHECKOUT_MARKER", "environment_findings"]

_PROBE_SECONDS = 600
_INSTALL = "kura backend install musubi --source DIR"


def environment_findings(workspace: Workspace | None) -> list[Finding]:
    """The host executor's environment, checked as a run uses it. Its absence is a
    warning (the docker executor needs none); a broken one is a failure."""
    location = musubi_env(workspace)
    if not location.present:
        return [
            Finding(
                "musubi environment",
                "warn",
                f"none at {location.path} (chosen by {location.source}); the host executor "
                "needs one",
                f"{_INSTALL} ({INSTALL_SIZE})",
            )
        ]
    try:
        trainer = host_trainer(workspace)
    except KuraError as err:
        return [Finding("musubi environment", "fail", err.message, err.hint or _INSTALL)]
    found = [
        Finding(
            "musubi environment",
            "ok",
            f"{location.path} (chosen by {location.source}); runs the checkout {trainer.checkout}",
        )
    ]
    return found + _probe_findings(trainer)


def _scripts() -> list[str]:
    return sorted({script for adapter in ADAPTERS.values() for script in adapter.scripts.values()})


def _probe_findings(trainer: HostTrainer) -> list[Finding]:
    from kura.backends.musubi.helper import call_helper

    request = {"checkout": str(trainer.checkout), "scripts": _scripts()}
    try:
        report = call_helper(
            trainer.location, "probe", request, cwd=trainer.checkout, timeout=_PROBE_SECONDS
        )
    except KuraError as err:
        return [Finding("musubi packages", "fail", err.message, f"{_INSTALL} --force")]
    return [_packages(report, trainer), _source(report, trainer), _script_imports(report)]


def _packages(report: dict[str, Any], trainer: HostTrainer) -> Finding:
    packages: dict[str, str | None] = report.get("packages") or {}
    wrong = []
    for pin in PINS:
        name, _, version = pin.requirement.partition("==")
        if packages.get(name) != version:
            wrong.append(f"{name} {packages.get(name) or 'missing'} (pinned {version})")
    if packages.get("musubi-tuner") != MUSUBI_RELEASE:
        wrong.append(f"musubi-tuner {packages.get('musubi-tuner') or 'missing'}")
    if packages.get(REMOVED.requirement):
        wrong.append(f"{REMOVED.requirement} installed ({REMOVED.reason})")
    shown = ", ".join(f"{k} {v}" for k, v in packages.items() if v and k != "triton")
    cuda = "torch sees a CUDA GPU" if report.get("cuda") else "torch sees no GPU (CPU only)"
    if wrong:
        return Finding("musubi packages", "warn", "; ".join(wrong), f"{_INSTALL} --force")
    return Finding("musubi packages", "ok", f"{shown}; {cuda}")


def _source(report: dict[str, Any], trainer: HostTrainer) -> Finding:
    """The installed package must be the checkout's: the scripts run from the checkout
    import ``musubi_tuner`` from the environment."""
    installed = report.get("installed_from")
    if installed and str(trainer.checkout) == installed.rstrip("/"):
        return Finding("musubi source", "ok", f"musubi-tuner installed from {installed}")
    return Finding(
        "musubi source",
        "fail",
        f"the environment's musubi-tuner comes from {installed or 'an unknown place'}, not "
        f"the checkout {trainer.checkout} its kura-env.json names",
        f"kura backend install musubi --source {trainer.checkout} --force",
    )


def _script_imports(report: dict[str, Any]) -> Finding:
    scripts: dict[str, str] = report.get("scripts") or {}
    failed = {name: error for name, error in scripts.items() if error != "ok"}
    if not failed:
        return Finding("musubi scripts", "ok", f"all {len(scripts)} entry scripts import")
    by_arch = sorted(
        {
            adapter.id
            for adapter in ADAPTERS.values()
            if any(s in failed for s in adapter.scripts.values())
        }
    )
    first = next(iter(sorted(failed.items())))
    return Finding(
        "musubi scripts",
        "warn",
        f"{len(failed)} of {len(scripts)} entry scripts do not import here, so "
        f"{', '.join(by_arch)} cannot run on this machine ({first[0]}: {first[1]})",
        "a GPU host (e.g. Wan's T5 asks CUDA for a device at import), or the docker executor",
    )
