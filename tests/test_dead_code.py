"""No dead function: every module-level function of ``src/kura`` is used somewhere (Kura's
own code, its tests, bench/, a template, an entry point or a ``module:function`` string).

Decorated functions are left out (click commands and pydantic validators are called by their
framework), as are module ``__getattr__`` hooks. A name counts as used when it appears as a
name or an attribute in any Python file other than its definition, or as a word in any other
shipped file (templates, pyproject's entry points, the ``module:attribute`` tables)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "kura"
PYTHON = [*SRC.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]
OTHER = [
    ROOT / "pyproject.toml",
    *(p for p in SRC.rglob("*") if p.is_file() and p.suffix in {".html", ".jinja", ".j2", ".js"}),
]


def _defined() -> dict[str, list[str]]:
    """Function name → where it is defined (module-level, undecorated)."""
    found: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if function and not node.decorator_list and node.name != "__getattr__":
                found.setdefault(node.name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _exported(tree: ast.Module) -> set[int]:
    """The ids of the string constants in ``__all__`` (a name listed there is not a use)."""
    return {
        id(element)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        for element in ast.walk(node.value)
    }


def _used() -> set[str]:
    names: set[str] = set()
    for path in PYTHON:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        listed = _exported(tree)
        for node in ast.walk(tree):
            if id(node) in listed:
                continue
            elif isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.alias):
                names.add(node.name.rsplit(".", 1)[-1])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names |= set(re.findall(r"[A-Za-z_]\w*", node.value))
    for path in OTHER:
        names |= set(re.findall(r"[A-Za-z_]\w*", path.read_text(encoding="utf-8")))
    return names


def test_every_function_is_used_somewhere() -> None:
    used = _used()
    dead = sorted(
        where for name, places in _defined().items() if name not in used for where in places
    )
    assert dead == []
