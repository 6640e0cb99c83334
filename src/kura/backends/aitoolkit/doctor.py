"""``kura doctor ai-toolkit``'s host findings (the GPUs, Docker, the image and kura.toml's
checkout are :class:`kura.backends.standard.CheckoutBackend`'s).

- Host executor: the environment ``kura backend install ai-toolkit`` made
  (:mod:`.env`), checked the way a job uses it: its record names a checkout at the pinned
  release, and :mod:`.envprobe`, run with the environment's Python from that checkout,
  imports torch and every extension through AI-Toolkit's own ``get_all_extensions`` (one
  extension that fails to import stops every job type).

The doctor fails when neither executor can run AI-Toolkit here: where the host environment
passes every check, a missing Docker engine or image is a warning.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kura.backends.aitoolkit.env import (
    CHECKOUT_MARKER,
    INSTALL_SIZE,
    PINS,
    installed_checkout,
)
from kura.backends.aitoolkit.envprobe import MARKER
from kura.backends.base import Finding
from kura.backends.trainer_env import EnvLocation
from kura.errors import KuraError

__all__ = ["CHECKOUT_MARKER", "PROBE", "env_findings", "probe_env"]

PROBE = Path(__file__).with_name("envprobe.py")
PROBE_TIMEOUT = 600.0
"""Importing every extension takes 20–60 s on a loaded 2-core machine."""
_INSTALL = "kura backend install ai-toolkit --source DIR"
_TORCH_PIN = next(p.requirement.split("==")[1] for p in PINS if p.requirement.startswith("torch=="))

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class ProbeAnswer:
    """What :mod:`.envprobe` said, or why it said nothing (``crashed``)."""

    facts: dict[str, object]
    crashed: str | None = None


def probe_env(location: EnvLocation, checkout: Path, *, runner: Runner) -> ProbeAnswer:
    """Run the probe with the environment's Python from ``checkout``; nothing is written
    there (no bytecode) and nothing is downloaded."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FORCE_COLOR")}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"})
    try:
        done = runner(
            [str(location.python), str(PROBE)],
            cwd=str(checkout),
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            env=env,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return ProbeAnswer({}, crashed=str(error))
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if done.returncode != 0 or not lines:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        return ProbeAnswer({}, crashed=f"exit {done.returncode}: {tail}")
    facts = json.loads(lines[-1][len(MARKER) :])
    return ProbeAnswer(facts if isinstance(facts, dict) else {})


def env_findings(location: EnvLocation, *, runner: Runner) -> tuple[list[Finding], dict[str, str]]:
    """The host executor's environment, as a job would use it, and the facts found."""
    details = {"environment": str(location.path), "environment_source": location.source}
    if not location.present:
        return [
            Finding(
                "ai-toolkit env",
                "warn",
                f"no AI-Toolkit environment at {location.path} (chosen by {location.source}): "
                "the host executor cannot run AI-Toolkit (the Docker executor does not need it)",
                f"`{_INSTALL}` ({INSTALL_SIZE}), or point KURA_AITK_ENV / kura.toml "
                "executor.aitk_env at one",
            )
        ], details
    try:
        checkout = installed_checkout(location)
    except KuraError as error:
        return [Finding("ai-toolkit env", "fail", error.message, error.hint)], details
    details |= {"python": str(location.python), "checkout": str(checkout)}
    found = [
        Finding("ai-toolkit env", "ok", f"{location.path} (chosen by {location.source})"),
        Finding("ai-toolkit source", "ok", f"{checkout} (the checkout run.py starts from)"),
    ]
    answer = probe_env(location, checkout, runner=runner)
    return [*found, *_probe_findings(answer, location)], details


def _probe_findings(answer: ProbeAnswer, location: EnvLocation) -> list[Finding]:
    reinstall = f"`{_INSTALL} --force`"
    if answer.crashed is not None:
        return [
            Finding(
                "ai-toolkit python",
                "fail",
                f"{location.python} did not run the probe: {answer.crashed}",
                reinstall,
            )
        ]
    facts = answer.facts
    out = [Finding("ai-toolkit python", "ok", f"Python {facts.get('python', '?')}")]
    if "torch_error" in facts:
        detail = f"torch does not import: {facts['torch_error']}"
        return [*out, Finding("ai-toolkit torch", "fail", detail, reinstall)]
    torch = str(facts.get("torch", "?"))
    pinned = torch.split("+")[0] == _TORCH_PIN
    out.append(
        Finding(
            "ai-toolkit torch",
            "ok" if pinned else "warn",
            f"torch {torch}, CUDA {'available' if facts.get('cuda') else 'not available'}"
            + ("" if pinned else f" (Kura installs {_TORCH_PIN})"),
            "" if pinned else reinstall,
        )
    )
    if "extensions_error" in facts:
        error = str(facts["extensions_error"])
        fix = reinstall
        if facts.get("triton") and not facts.get("cuda"):
            fix = (
                f"`{location.python} -m pip uninstall -y triton` (triton without a GPU breaks "
                f"the omnigen2 extension's import), or {reinstall}"
            )
        out.append(
            Finding(
                "ai-toolkit extensions",
                "fail",
                "an extension does not import, so no AI-Toolkit job can start "
                f"(toolkit/extension.py get_all_extensions): {error}",
                fix,
            )
        )
        return out
    uids = facts.get("extensions")
    names = [str(u) for u in uids] if isinstance(uids, list) else []
    trainer = "sd_trainer" in names and "diffusion_trainer" in names
    out.append(
        Finding(
            "ai-toolkit extensions",
            "ok" if trainer else "fail",
            f"{len(names)} extension processes import"
            + ("" if trainer else " but sd_trainer/diffusion_trainer is not among them"),
            "" if trainer else f"check the checkout's extensions_built_in/sd_trainer; {reinstall}",
        )
    )
    return out
