"""The package layers, pinned by reading every module's imports (no import is executed).

The import graph counts every import: module level, under ``if TYPE_CHECKING:`` and inside
functions (see :func:`_every_import` for why); it has no cycle, and the seam reaches only
the value modules below it.

Above the seam nothing imports a trainer package; below it nothing imports the layers that
use it. ``kura doctor``, ``kura image build``, ``kura estimate`` and ``kura backend
list|install`` dispatch through the registry (the backends' ``doctor``, ``image``,
``estimate`` and ``setup`` verbs), so no module above the seam is exempt. ``models/`` is
checked the same way: ``kura model check`` and bundle resolution reach a trainer's file rules
through the registry, never by importing its package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kura"
TRAINERS = ("kura.backends.musubi", "kura.backends.aitoolkit", "kura.backends.kohakumoss")
ABOVE_THE_SEAM = (
    "runs",
    "planning",
    "execution",
    "export",
    "web",
    "cli",
    "knowledge",
    "sweep",
    # models/ applies a trainer's file rules through the registry (``Backend.file_rules``).
    "models",
)
BELOW = {
    # schema validates backend.name against the backend names (no trainer is imported).
    "schema": ("kura.runs", "kura.execution", "kura.cli", "kura.web", "kura.backends.musubi"),
    "models": ("kura.runs", "kura.execution", "kura.cli", "kura.web"),
    "dataset": ("kura.runs", "kura.execution", "kura.cli", "kura.web", "kura.backends"),
    "planning": ("kura.runs", "kura.execution", "kura.cli", "kura.web"),
    "backends": ("kura.runs", "kura.execution.executors", "kura.cli", "kura.web"),
    # sizing holds the trainer-neutral estimator parts every backend's estimator uses.
    "sizing": ("kura.runs", "kura.execution", "kura.cli", "kura.web", "kura.backends"),
}


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py"))


@pytest.mark.parametrize("package", ABOVE_THE_SEAM)
def test_nothing_above_the_seam_imports_a_trainer(package: str) -> None:
    offenders = {
        str(path.relative_to(SRC)): sorted(i for i in imports(path) if i.startswith(TRAINERS))
        for path in modules(package)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.parametrize("package", sorted(BELOW))
def test_lower_layers_do_not_import_upper_ones(package: str) -> None:
    banned = BELOW[package]
    offenders = {
        str(path.relative_to(SRC)): sorted(i for i in imports(path) if i.startswith(banned))
        for path in modules(package)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_trainer_packages_do_not_import_each_other() -> None:
    """A backend stands alone: AI-Toolkit's package borrows nothing of Musubi's (no shapes,
    no estimator), and Musubi's nothing of AI-Toolkit's."""
    for own in TRAINERS:
        package = own.removeprefix("kura.").replace(".", "/")
        others = tuple(t for t in TRAINERS if t != own)
        offenders = {
            str(path.relative_to(SRC)): sorted(i for i in imports(path) if i.startswith(others))
            for path in modules(package)
        }
        assert {k: v for k, v in offenders.items() if v} == {}


def test_command_modules_do_not_import_the_entry_point() -> None:
    """cli/main.py lists the commands; a command module importing it back is a cycle."""
    offenders = [
        str(path.relative_to(SRC))
        for path in modules("cli")
        if path.name != "main.py"
        and "kura.cli.main" in imports(path)
        and path.name != "demo.py"  # the demo runs the entry point, inside its function
    ]
    assert offenders == []


def test_workspace_does_not_import_knowledge() -> None:
    assert not any(i.startswith("kura.knowledge") for i in imports(SRC / "workspace.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}


def _every_import(path: Path) -> set[str]:
    """The modules ``path`` imports anywhere: at module level, under ``if TYPE_CHECKING:``,
    and inside functions.

    All three count. A lazy or type-only import hides a cycle from the interpreter, not from
    the design: the two modules still need each other (to type-check, to be read, to be moved),
    and the lazy import is usually the patch that made the cycle run. ``from a import b``
    counts ``a.b`` too (``b`` may be a module)."""
    deps: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            deps |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            deps.add(node.module)
            deps |= {f"{node.module}.{alias.name}" for alias in node.names}
    return deps


def _kura_imports(name: str, path: Path) -> set[str]:
    return {d for d in _every_import(path) if d in MODULES and d != name}


IMPORT_GRAPH = {name: _kura_imports(name, path) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per back edge of a depth-first walk (empty: the graph is acyclic)."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return cycles


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or through others, counting every import
    (:func:`_every_import`: type-only and function-level ones too)."""
    assert _cycles(IMPORT_GRAPH) == []


def test_the_cycle_check_sees_lazy_and_type_only_imports(tmp_path: Path) -> None:
    """A cycle closed only by a TYPE_CHECKING import one way and a function-level import the
    other is found (the test above cannot pass by not looking)."""
    lower = tmp_path / "lower.py"
    lower.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from up import Up\n")
    upper = tmp_path / "up.py"
    upper.write_text("def f() -> None:\n    from lower import Down\n")
    graph = {
        "lower": _every_import(lower) & {"up"},
        "up": _every_import(upper) & {"lower"},
    }
    assert _cycles(graph) == [["lower", "up", "lower"]]


SEAM = "kura.backends.base"
SEAM_MAY_REACH = (
    "kura.errors",
    # Leaf value modules: what the Backend protocol's signatures take and return.
    "kura.gpu_class",
    "kura.architectures",
    "kura.workspace",
    "kura.locking",
    "kura.fsutil",
    "kura.bounded",
    "kura.constants",
    "kura.yamlio",
    "kura.plainyaml",
    "kura.yamlrules",
    "kura.schema",
    "kura.models",
    "kura.backends.names",
    "kura.backends.trainer_env",
)
"""Everything the seam may reach, transitively, counting every import: stdlib, kura.errors
and the value modules its types name (run and dataset specs, the workspace, a model report,
a GPU class). Not the planner, the registry, a trainer package or a layer above."""


def _reach(module: str) -> set[str]:
    """Every Kura module importing ``module`` loads: its imports, theirs, and the packages
    they sit in (Python runs a package's ``__init__`` first)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        parents = [".".join(current.split(".")[:n]) for n in range(2, current.count(".") + 1)]
        for dep in [*IMPORT_GRAPH[current], *(p for p in parents if p in MODULES)]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen - {"kura"}


def test_the_seam_depends_on_nothing_above_it() -> None:
    """``backends/base.py`` reaches only :data:`SEAM_MAY_REACH` (never ``planning/``: the
    GPU class and the ladder's rungs it names live in ``kura.gpu_class`` and the seam)."""
    beyond = sorted(
        m for m in _reach(SEAM) if not m.startswith(SEAM_MAY_REACH) and m != "kura.backends"
    )
    assert beyond == []
    assert SEAM not in _reach(SEAM)
