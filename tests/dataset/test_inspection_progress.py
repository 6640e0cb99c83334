"""The inspection's progress covers both passes: it reaches its end only after the
likeness pass, never while pictures are still being compared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.dataset.dataset_builders import Builder, picture

import kura.dataset.inspect as inspect_module
from kura.dataset.inspect import inspect_dataset


def _folder(root: Path, count: int = 6) -> Path:
    builder = Builder(root)
    for index in range(count):
        builder.image(f"{index}.png", (96, 64), image=picture(96, 64, seed=index % 3))
    return root


def test_progress_reaches_its_end_only_after_the_likeness_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[int, int]] = []
    at_comparison: list[list[tuple[int, int]]] = []
    real = inspect_module.find_likenesses

    def watched(pictures: Any, progress: Any = None) -> Any:
        at_comparison.append(list(calls))
        return real(pictures, progress)

    monkeypatch.setattr(inspect_module, "find_likenesses", watched)
    inspect_dataset(_folder(tmp_path / "d"), progress=lambda d, t: calls.append((d, t)))
    assert at_comparison, "the likeness pass did not run"
    before = at_comparison[0]
    assert before and all(done < total for done, total in before), before
    done, total = calls[-1]
    assert done == total
    assert all(t == total for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_the_likeness_pass_reports_each_pair_it_judges() -> None:
    from kura.dataset.likeness import find_likenesses

    calls: list[tuple[int, int]] = []
    assert find_likenesses([], lambda d, t: calls.append((d, t))) == []
    assert calls == [(0, 0)]
