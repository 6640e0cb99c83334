"""The package layers, pinned by reading every module's imports (no import is executed).

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
    # spec validates backend.name against the registry's names (no trainer is imported).
    "spec": ("kura.runs", "kura.execution", "kura.cli", "kura.web", "kura.backends.musubi"),
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


def test_no_import_cycle_at_import_time() -> None:
    """Module-level imports form no cycle (imports inside functions are lazy and allowed;
    ``if TYPE_CHECKING`` blocks are not run)."""
    names = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        deps: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                deps |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                deps.add(node.module)
                deps |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {d for d in deps if d in names and d != name}
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
    assert cycles == []
