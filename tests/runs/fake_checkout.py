"""A fake Musubi checkout for end-to-end launch tests (a test double, not a trainer).

The environment does not reach it (Kura passes only a short list of variables), so its mode
is a file in the checkout (:func:`set_mode`). Its cache scripts check that the dataset config
they are given exists and exit 0; its train scripts hand the output flags to
``tests/execution/fake_musubi.py``, which prints Musubi's progress lines and writes LoRA
files. ``accelerate`` and ``python`` on the fake PATH run the named script with this
interpreter.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

FAKE_MUSUBI = Path(__file__).resolve().parents[1] / "execution" / "fake_musubi.py"

CACHE_SCRIPT = """import sys
args = sys.argv[1:]
config = args[args.index("--dataset_config") + 1]
open(config).read()
print("caching done for", config)
"""

TRAIN_SCRIPT = f"""import os, sys
args = sys.argv[1:]
def value(flag):
    return args[args.index(flag) + 1]
mode_file = os.path.join(os.path.dirname(__file__), "..", "..", "fake_mode")
mode = open(mode_file).read().strip() if os.path.exists(mode_file) else "ok"
os.execv(sys.executable, [sys.executable, {str(FAKE_MUSUBI)!r},
    "--output_dir", value("--output_dir"), "--output_name", value("--output_name"),
    "--logging_dir", value("--logging_dir"), "--max_train_epochs", "2", "--fake_mode", mode])
"""

ACCELERATE = f"""#!{sys.executable}
import os, sys
args = sys.argv[2:]
while args and not args[0].endswith(".py"):
    args = args[1:]
os.execv({sys.executable!r}, [{sys.executable!r}, *args])
"""


def make_checkout(root: Path, prefix: str) -> tuple[Path, Path]:
    """(checkout, bin folder) for an architecture whose scripts start with ``prefix``."""
    scripts = root / "musubi" / "src" / "musubi_tuner"
    scripts.mkdir(parents=True)
    for suffix in ("cache_latents", "cache_text_encoder_outputs"):
        (scripts / f"{prefix}_{suffix}.py").write_text(CACHE_SCRIPT)
    (scripts / f"{prefix}_train_network.py").write_text(TRAIN_SCRIPT)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    accelerate = bin_dir / "accelerate"
    accelerate.write_text(ACCELERATE)
    accelerate.chmod(accelerate.stat().st_mode | stat.S_IEXEC)
    return root / "musubi", bin_dir


def set_mode(checkout: Path, mode: str) -> None:
    """ok, oom, crash, hang, nan or slow: read by the fake train script at start."""
    (checkout / "fake_mode").write_text(mode)


def prepend_path(bin_dir: Path) -> str:
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def use_fake_checkout(workspace: Any, root: Path, bundle: str, monkeypatch: Any) -> Path:
    """Host-executor setup for tests: ``bundle``'s model files as header-only stand-ins in a
    hub cache under ``root``, a fake checkout (named in kura.toml too, as the install's
    source) and a fake Musubi environment at ``root`` (``KURA_MUSUBI_ENV``) whose
    ``kura-env.json`` names the checkout and whose ``bin/`` the steps run. Returns the
    checkout."""
    from kura.backends.musubi.env import env_record
    from kura.backends.trainer_env import EnvLocation, write_env_record
    from kura.models.bundles import get_bundle
    from kura.models.standins import install_bundle_in_hub_cache

    cache = root / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    install_bundle_in_hub_cache(get_bundle(bundle), cache)
    checkout, bin_dir = make_checkout(root, "flux_2")
    write_env_record(EnvLocation(bin_dir.parent, "test"), env_record(checkout))
    monkeypatch.setenv("KURA_MUSUBI_ENV", str(bin_dir.parent))
    config = workspace.config_path
    config.write_text(
        config.read_text().replace("[executor]", f'[executor]\nmusubi_checkout = "{checkout}"')
    )
    return checkout
