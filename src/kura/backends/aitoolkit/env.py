"""AI-Toolkit's own virtual environment: where it lives, what goes into it, which checkout it
runs.

AI-Toolkit is not a package: it runs as ``python run.py JOB`` from its source tree, with the
packages its ``requirements.txt`` lists. ``kura backend install ai-toolkit --source DIR``
makes a virtual environment of its own for it (Kura's process never imports it) and records
the checkout it installed for (``kura-env.json``, :mod:`kura.backends.trainer_env`); the
host executor then starts ``<env>/bin/python run.py`` with that checkout as the working
folder. The environment's folder is, first found:

1. ``KURA_AITK_ENV`` (environment variable);
2. ``executor.aitk_env`` in the workspace's ``kura.toml`` (relative to the workspace);
3. ``<user data dir>/kura/envs/ai-toolkit-27a03a9`` (platformdirs).

The pins (:data:`PINS`) are AI-Toolkit 27a03a9's ``requirements.txt`` with the changes a run
needs, each with its reason (checked by real runs, ``real-trainers-on-cpu.md``).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.aitoolkit.archs import AITK_COMMIT, AITK_RELEASE
from kura.backends.trainer_env import EnvLocation, EnvRecord, locate_env, read_env_record
from kura.errors import InvalidInput, KuraError, NotFound, SpecError, Unsupported

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = [
    "AITK_ENV_VARIABLE",
    "CHECKOUT_MARKER",
    "DEFAULT_ENV_NAME",
    "INSTALL_SIZE",
    "NO_DEPS_PINS",
    "PINS",
    "VERSION_FILE",
    "Pin",
    "checkout_release",
    "env_record",
    "install_commands",
    "installed_checkout",
    "validate_source",
    "workspace_env",
]

AITK_ENV_VARIABLE = "KURA_AITK_ENV"
DEFAULT_ENV_NAME = f"ai-toolkit-{AITK_COMMIT[:7]}"
CHECKOUT_MARKER = Path("run.py")
"""The entry every AI-Toolkit checkout has at its root."""
VERSION_FILE = Path("version.py")
"""``VERSION = "0.12.26"`` at 27a03a9 (read as text, never imported)."""
INSTALL_SIZE = "about 6 GB (torch's CUDA libraries), 5–10 minutes"

_VERSION = re.compile(r"""^VERSION\s*=\s*["']([^"']+)["']""", re.MULTILINE)


@dataclass(frozen=True)
class Pin:
    """One requirement ``kura backend install ai-toolkit`` asks pip for, and why."""

    requirement: str
    reason: str


_TORCH = (
    "the registry's torchvision wheels need the matching CUDA torch (with the CPU-only torch "
    "2.13 wheel `import torchvision` fails: operator torchvision::nms does not exist); these "
    "CUDA builds run on a CPU too"
)
_UPSTREAM = "AI-Toolkit 27a03a9's requirements pin"
_BY_NAME = "AI-Toolkit 27a03a9's requirements list it without a version"

PINS: tuple[Pin, ...] = (
    Pin("torch==2.14.1", _TORCH),
    Pin("torchvision==0.29.1", _TORCH),
    Pin(
        "diffusers==0.39.0",
        "AI-Toolkit pins a diffusers git commit (not on the registry); 0.41/0.42 need a newer "
        "huggingface_hub than its pin, 0.40.0 breaks the ltx2 extension's import against "
        "transformers 5.5.3 (Gemma4UnifiedForConditionalGeneration missing); 0.39.0 has "
        "every diffusers name AI-Toolkit imports",
    ),
    Pin("transformers==5.5.3", _UPSTREAM),
    Pin("huggingface_hub==1.23.0", _UPSTREAM),
    Pin("peft==0.18.1", _UPSTREAM),
    Pin("lycoris-lora==1.8.3", _UPSTREAM),
    Pin("optimum-quanto==0.2.4", _UPSTREAM),
    Pin("torchao==0.10.0", _UPSTREAM),
    Pin("scipy==1.12.0", _UPSTREAM),
    Pin("timm==1.0.22", _UPSTREAM),
    Pin("albumentations==1.4.15", _UPSTREAM),
    Pin("albucore==0.0.16", _UPSTREAM),
    Pin("controlnet_aux==0.0.10", _UPSTREAM),
    Pin("pytorch-wavelets==1.3.0", _UPSTREAM),
    Pin("matplotlib==3.10.1", _UPSTREAM),
    Pin("setuptools>=77.0.3", _UPSTREAM),
    Pin("av==16.0.1", _UPSTREAM),
    Pin("torchcodec==0.9.1", _UPSTREAM),
    Pin("librosa==0.11.0", _UPSTREAM),
    Pin("mutagen==1.47.0", _UPSTREAM),
    *(
        Pin(name, _BY_NAME)
        for name in (
            "safetensors",
            "flatten_json",
            "pyyaml",
            "oyaml",
            "tensorboard",
            "kornia",
            "invisible-watermark",
            "einops",
            "accelerate",
            "toml",
            "pydantic",
            "omegaconf",
            "open_clip_torch",
            "prodigyopt",
            "python-dotenv",
            "bitsandbytes",
            "hf_transfer",
            "lpips",
            "pytorch_fid",
            "sentencepiece",
            "gradio",
            "python-slugify",
            "opencv-python",
        )
    ),
)
"""What one pip resolve installs (the first command after the venv)."""

NO_DEPS_PINS: tuple[Pin, ...] = (
    Pin(
        "torchaudio==2.11.1",
        "installed with --no-deps: the registry has no torchaudio for torch 2.13/2.14, and "
        "AI-Toolkit only calls torchaudio.save",
    ),
)

TRITON_REASON = (
    "removed on a machine without an NVIDIA GPU: with triton importable and no GPU the "
    "omnigen2 extension calls torch.cuda.current_device() at import (extensions_built_in/"
    "diffusion_models/omnigen2/src/ops/triton/layer_norm.py:46), and one extension that fails "
    "to import stops every job (toolkit/extension.py); removed last, because torch's own "
    "requirement brings it back with the other packages"
)


def workspace_env(workspace: Workspace | None) -> EnvLocation:
    """The environment the variable, kura.toml or the default names."""
    toml_value = workspace.config().executor.aitk_env if workspace is not None else None
    return locate_env(
        variable=AITK_ENV_VARIABLE,
        toml_value=toml_value,
        workspace_root=workspace.root if workspace is not None else None,
        default_name=DEFAULT_ENV_NAME,
    )


def checkout_release(folder: Path) -> str | None:
    """The ``VERSION`` a checkout's ``version.py`` declares (None when it has none)."""
    try:
        text = (folder / VERSION_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = _VERSION.search(text)
    return found.group(1) if found else None


def validate_source(folder: Path) -> Path:
    """``folder`` resolved, when it is an AI-Toolkit checkout at the release Kura compiles
    for; otherwise a KuraError naming the folder and what it lacks."""
    path = folder.expanduser().resolve()
    if not path.is_dir():
        raise NotFound(
            f"{path} is not a folder",
            hint=f"give --source an ostris/ai-toolkit checkout at commit {AITK_COMMIT[:7]}",
            path=path,
        )
    if not (path / CHECKOUT_MARKER).is_file():
        raise InvalidInput(
            f"{path} has no {CHECKOUT_MARKER}: not an AI-Toolkit checkout",
            hint=f"give --source an ostris/ai-toolkit checkout at commit {AITK_COMMIT[:7]}",
            path=path,
        )
    release = checkout_release(path)
    if release != AITK_RELEASE:
        found = f"version {release}" if release else f"no VERSION in {VERSION_FILE}"
        raise Unsupported(
            f"{path} is AI-Toolkit {found}; Kura compiles for {AITK_RELEASE} "
            f"(commit {AITK_COMMIT[:7]})",
            hint=f"check out {AITK_COMMIT} there (`git checkout {AITK_COMMIT[:7]}`), or give "
            "--source a checkout at it",
            path=path,
        )
    return path


def install_commands(
    location: EnvLocation, base_python: str | None, *, remove_triton: bool
) -> tuple[tuple[str, ...], ...]:
    """The argv lists that make the environment, in order (never a shell string)."""
    python = base_python or sys.executable
    pip = (str(location.python), "-m", "pip", "install", "--disable-pip-version-check")
    commands: list[tuple[str, ...]] = [
        (python, "-m", "venv", str(location.path)),
        (*pip, *(p.requirement for p in PINS)),
        (*pip, "--no-deps", *(p.requirement for p in NO_DEPS_PINS)),
    ]
    if remove_triton:
        commands.append((str(location.python), "-m", "pip", "uninstall", "-y", "triton"))
    return tuple(commands)


def env_record(checkout: Path) -> EnvRecord:
    """What ``kura-env.json`` says once the install commands succeeded."""
    return EnvRecord(
        backend="ai-toolkit",
        release=AITK_RELEASE,
        checkout=str(checkout),
        packages=[p.requirement for p in (*PINS, *NO_DEPS_PINS)],
    )


def installed_checkout(location: EnvLocation) -> Path:
    """The checkout the environment was installed for (its record), checked again: the
    host executor starts ``run.py`` there. A SpecError saying how to install otherwise."""
    install = f"run `kura backend install ai-toolkit --source DIR` ({INSTALL_SIZE})"
    if not location.present:
        raise SpecError(
            f"execution.executor is `host` but AI-Toolkit's environment is not installed at "
            f"{location.path} (chosen by {location.source})",
            hint=f"{install}, point KURA_AITK_ENV / kura.toml executor.aitk_env at one, or "
            "use execution.executor: docker",
            path=location.path,
        )
    record = read_env_record(location)
    if record is None or record.backend != "ai-toolkit" or not record.checkout:
        raise SpecError(
            f"{location.path} holds no AI-Toolkit environment Kura installed (no "
            f"{location.record_path.name} naming its checkout)",
            hint=install + " (add --force over an existing folder)",
            path=location.path,
        )
    if record.release != AITK_RELEASE:
        raise SpecError(
            f"the AI-Toolkit environment at {location.path} was installed for "
            f"{record.release}; Kura compiles for {AITK_RELEASE}",
            hint=f"{install} --force, from a checkout at commit {AITK_COMMIT[:7]}",
            path=location.path,
        )
    try:
        return validate_source(Path(record.checkout))
    except KuraError as error:
        raise SpecError(
            f"the checkout AI-Toolkit's environment runs is gone or changed: {error.message}",
            hint=f"restore it, or {install} --force",
            path=record.checkout,
        ) from None
