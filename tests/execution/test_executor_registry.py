"""Executors through their registry: what an executor can do is an attribute of its class
(``in_container``, ``local_image``, ``remote``), and ``runs/`` and ``sweep/`` ask the registry
instead of comparing executor names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kura.errors import UsageError
from kura.execution.executors import (
    EXECUTORS,
    DockerExecutor,
    HostExecutor,
    SkyPilotExecutor,
    executor_class,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "kura"


@pytest.mark.parametrize(
    ("executor", "in_container", "local_image", "remote"),
    [
        (HostExecutor, False, False, False),
        (DockerExecutor, True, True, False),
        (SkyPilotExecutor, True, False, True),
    ],
)
def test_each_executor_says_what_it_can_do(
    executor: type[HostExecutor], in_container: bool, local_image: bool, remote: bool
) -> None:
    assert executor_class(executor.name) is executor
    assert (executor.in_container, executor.local_image, executor.remote) == (
        in_container,
        local_image,
        remote,
    )


def test_an_unknown_executor_names_the_registered_ones() -> None:
    with pytest.raises(UsageError, match="unknown executor 'slurm'") as refused:
        executor_class("slurm")
    assert all(name in (refused.value.hint or "") for name in EXECUTORS)


def _name_comparisons(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            constants = [
                c.value for c in [node.left, *node.comparators] if isinstance(c, ast.Constant)
            ]
            if any(value in EXECUTORS for value in constants):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return found


@pytest.mark.parametrize("package", ["runs", "sweep"])
def test_runs_and_sweeps_do_not_compare_executor_names(package: str) -> None:
    offenders = [
        hit for path in sorted((SRC / package).rglob("*.py")) for hit in _name_comparisons(path)
    ]
    assert offenders == []
