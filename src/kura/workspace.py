"""The workspace: a folder with ``kura.toml``, found by walking up from the current folder.

Layout::

    kura.toml        settings
    datasets/<name>/ dataset.yaml (+ copied media, or a pointer to them)
    models/          model files
    runs/<id>/       run.yaml, compiled/, plan.md, logs/, output/ …
    knowledge/       cards, preferences, regrets
    .kura/           Kura's own state (the workspace lock)

The settings' schema is :mod:`kura.schema.workspace`, imported when a setting is first read:
finding a workspace (every command does) builds no model.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.bounded import check_parsed, decode_utf8, read_limited, too_deep
from kura.errors import InvalidInput, UsageError, WorkspaceNotFound
from kura.locking import hold_lock

if TYPE_CHECKING:
    from kura.schema.workspace import WorkspaceConfig

__all__ = [
    "CONFIG_NAME",
    "Workspace",
    "check_name",
    "create_layout",
    "find_workspace",
    "id_stamp",
    "local_now",
    "new_run_id",
]

CONFIG_NAME = "kura.toml"
LAYOUT = ("datasets", "models", "runs", "knowledge")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


_configs: dict[str, tuple[tuple[int, int, int, int], WorkspaceConfig]] = {}
"""kura.toml path → (its stat when read, what it held)."""


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def datasets_dir(self) -> Path:
        return self.root / "datasets"

    @property
    def models_dir(self) -> Path:
        return self.root / "models"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def knowledge_dir(self) -> Path:
        return self.root / "knowledge"

    @property
    def state_dir(self) -> Path:
        return self.root / ".kura"

    def dataset_dir(self, name: str) -> Path:
        return self.datasets_dir / check_name(name, "dataset")

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / check_name(run_id, "run")

    def config(self) -> WorkspaceConfig:
        """kura.toml, read again only when its stat (inode, size, mtime, ctime) changed: the
        backends ask for it at several stages of one command."""
        path = self.config_path
        try:
            info = path.stat()
            stamp = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        except OSError:
            stamp = None
        cached = _configs.get(str(path))
        if stamp is not None and cached is not None and cached[0] == stamp:
            return cached[1].model_copy(deep=True)
        config = self._read_config()
        if stamp is not None:
            _configs[str(path)] = (stamp, config.model_copy(deep=True))
        return config

    def _read_config(self) -> WorkspaceConfig:
        from pydantic import ValidationError

        from kura.schema.workspace import WorkspaceConfig

        data = load_toml(self.config_path)
        try:
            return WorkspaceConfig.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(p) for p in first["loc"])
            raise InvalidInput(
                f"{self.config_path}: `{key}`: {first['msg']}",
                hint="remove or correct that key",
                path=self.config_path,
            ) from None

    @contextmanager
    def lock(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the workspace write lock."""
        with hold_lock(self.state_dir / "lock", timeout=timeout):
            yield

    def relative(self, path: Path) -> str:
        """A path relative to the root where possible, for messages and JSON."""
        try:
            return str(Path(path).resolve().relative_to(self.root))
        except ValueError:
            return str(path)


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file within :mod:`kura.bounded`'s size, nesting and integer bounds."""
    import tomllib

    text = decode_utf8(read_limited(path, what="TOML file"), path)
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise too_deep(path) from None
    except ValueError as exc:  # TOMLDecodeError, and int() refusing a 5,000-digit integer
        raise InvalidInput(
            f"{path} cannot be read: {exc}",
            hint="fix the TOML syntax, or move it aside and run `kura init` again",
            path=path,
        ) from None
    check_parsed(data, path)
    return data


def find_workspace(start: Path | None = None, explicit: Path | None = None) -> Workspace:
    """The workspace named by ``explicit`` (or ``KURA_WORKSPACE``), or the nearest folder at
    or above ``start`` that holds ``kura.toml``."""
    explicit = explicit or (
        Path(os.environ["KURA_WORKSPACE"]) if os.environ.get("KURA_WORKSPACE") else None
    )
    if explicit is not None:
        root = explicit.expanduser().resolve()
        if not (root / CONFIG_NAME).is_file():
            raise WorkspaceNotFound(
                f"{root} is not a Kura workspace (no {CONFIG_NAME})",
                hint=f"run `kura init {explicit}` to create one",
                path=root,
            )
        return Workspace(root)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return Workspace(folder)
    raise WorkspaceNotFound(
        f"no Kura workspace at or above {here}",
        hint="run `kura init` here, or pass --workspace DIR",
        path=here,
    )


def create_layout(root: Path) -> tuple[Workspace, list[str]]:
    """Create the folders and ``kura.toml`` (kept if present). Returns what was created.

    ``kura.initialize.init_workspace`` adds the knowledge cards on top; this module stays
    below the knowledge package (no import cycle)."""
    root = root.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} exists and is not a folder", path=root)
    created: list[str] = []
    root.mkdir(parents=True, exist_ok=True)
    workspace = Workspace(root)
    with workspace.lock():
        for name in LAYOUT:
            folder = root / name
            if not folder.is_dir():
                folder.mkdir()
                created.append(f"{name}/")
        if not workspace.config_path.exists():
            from kura.fsutil import atomic_write_text

            atomic_write_text(workspace.config_path, _default_config_text())
            created.append(CONFIG_NAME)
    workspace.config()
    return workspace, created


def _default_config_text() -> str:
    import tomli_w

    from kura.schema.workspace import WorkspaceConfig

    data: dict[str, Any] = WorkspaceConfig().model_dump(exclude_none=True)
    data = {key: value for key, value in data.items() if value != {}}  # [skypilot]: all unset
    header = "# Kura workspace settings. `kura schema workspace` lists every key.\n"
    return header + tomli_w.dumps(data)


def check_name(name: str, what: str) -> str:
    """Names of datasets and runs become folder names: refuse anything that could escape."""
    if not _NAME_RE.fullmatch(name):
        raise UsageError(
            f"{what} name {name!r} is not allowed",
            hint="use 1-64 letters, digits, '_', '.', '-', starting with a letter or digit",
        )
    return name


def local_now() -> datetime:
    """The local wall clock that stamps run and sweep ids. The one place ids read the time,
    so a caller injects ``now`` and the test suite pins this (an id never depends on when
    a test happens to run)."""
    return datetime.now()


def id_stamp(now: datetime | None = None) -> str:
    """``YYYYMMDD-HHMM`` of ``now``, else of :func:`local_now`: the time part of an id."""
    return (now or local_now()).strftime("%Y%m%d-%H%M")


def new_run_id(runs_dir: Path, now: datetime | None = None) -> str:
    """A run id that sorts by time: ``YYYYMMDD-HHMM``, plus ``-2``, ``-3`` … when taken."""
    stamp = id_stamp(now)
    candidate, n = stamp, 1
    while (runs_dir / candidate).exists():
        n += 1
        candidate = f"{stamp}-{n}"
    return candidate
