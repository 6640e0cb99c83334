"""Optional extras (``pip install 'kura[NAME]'``): say which one to install, never a raw
``ModuleNotFoundError``.

The web page (``kura serve``) needs the ``web`` extra, every ``kura sweep`` command the
``sweep`` extra (Optuna). The check looks the packages up without importing them, so a
command that does not need them stays fast."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from kura.errors import Unsupported

__all__ = ["SWEEP_MODULES", "WEB_MODULES", "require_extra"]

WEB_MODULES = ("fastapi", "uvicorn", "jinja2", "multipart")
SWEEP_MODULES = ("optuna",)


def require_extra(extra: str, modules: Sequence[str], needed_by: str) -> None:
    """Raise :class:`Unsupported` naming the extra when any of ``modules`` is missing."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise Unsupported(
            f"{needed_by} needs {', '.join(missing)}, which this installation lacks",
            hint=f"install the {extra} extra: pip install 'kura[{extra}]' "
            f"(or -e '.[{extra}]' in a checkout)",
        )
