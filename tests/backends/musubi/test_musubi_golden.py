"""Golden files: the exact dataset TOML and steps per architecture and mode.

Compared byte for byte. Refresh only on purpose, then review the diff::

    KURA_UPDATE_GOLDEN=1 .venv/bin/pytest tests/backends/musubi/test_musubi_golden.py
    # or: .venv/bin/pytest tests/backends --update-golden
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from musubi_cases import CASES, Case

from kura.backends.documents import compiled_document
from kura.backends.musubi import compile_run

GOLDEN = Path(__file__).parent / "golden"


def rendered(case: Case) -> dict[str, str]:
    """The golden files of one case: each compiled file, plus the rest as JSON."""
    result = compiled_document(compile_run(*case.build()))
    files = result.pop("files")
    result["files"] = sorted(files)
    out = dict(files.items())
    out["compiled.json"] = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_compiled_run_matches_golden(case: Case, update_golden: bool) -> None:
    folder = GOLDEN / case.name
    files = rendered(case)
    if update_golden:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.iterdir():
            if stale.name not in files:
                stale.unlink()
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        return
    assert folder.is_dir(), f"no golden files for {case.name}; run with KURA_UPDATE_GOLDEN=1"
    on_disk = sorted(p.name for p in folder.iterdir())
    assert on_disk == sorted(files), f"golden file set differs for {case.name}"
    for name, text in files.items():
        expected = (folder / name).read_text(encoding="utf-8")
        assert text == expected, (
            f"{case.name}/{name} differs from the golden file; if the change is intended, "
            "rerun with KURA_UPDATE_GOLDEN=1 and review the diff"
        )


def test_every_architecture_has_a_golden_case() -> None:
    from kura.backends.musubi import ADAPTERS

    covered = {case.architecture for case in CASES}
    assert covered == set(ADAPTERS)


def test_every_mode_has_a_golden_case() -> None:
    names = " ".join(case.name for case in CASES)
    for mode in ("plain", "fp8", "swap", "paired-edit", "video"):
        assert mode in names, mode


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_compiling_twice_is_byte_identical(case: Case) -> None:
    assert rendered(case) == rendered(case)
