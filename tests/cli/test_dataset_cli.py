from __future__ import annotations

from pathlib import Path

from PIL import Image

INSPECTION_KEYS = {"kind", "counts", "problems", "buckets", "trigger", "duplicates", "digest"}


def _dataset(folder: Path, count: int = 5) -> Path:
    folder.mkdir(parents=True)
    for index in range(count):
        Image.new("RGB", (512 + 64 * index, 512), (index * 40, 100, 100)).save(
            folder / f"{index}.png"
        )
        (folder / f"{index}.txt").write_text(f"myaku, sample {index}\n")
    return folder


def test_add_inspect_set_validate_list(kura, workspace: Path, tmp_path: Path) -> None:
    source = _dataset(tmp_path / "src")
    added = kura("--workspace", workspace, "dataset", "add", "myaku", source, "--json")
    assert added.exit_code == 0, added.stdout
    assert added.json()["kind"] == "dataset-add"

    inspected = kura(
        "-w", workspace, "dataset", "inspect", "myaku", "--resolution", "512", "--json"
    )
    report = inspected.json()
    assert set(report) >= INSPECTION_KEYS
    assert report["kind"] == "dataset-inspection"
    assert report["counts"]["images"] == 5
    trigger = report["trigger"]
    assert (trigger["word"], trigger["count"], trigger["total"]) == ("myaku", 5, 5)

    assert kura("-w", workspace, "dataset", "set", "myaku", "intent.task=character").exit_code == 0
    validated = kura("-w", workspace, "--json", "dataset", "validate", "myaku")
    assert validated.exit_code == 0
    assert validated.json()["ok"] is True

    listed = kura("-w", workspace, "dataset", "list", "--json").json()
    assert [(d["name"], d["intent"]["task"]) for d in listed["datasets"]] == [
        ("myaku", "character")
    ]


def test_validate_exits_1_with_fixes(kura, workspace: Path, tmp_path: Path) -> None:
    source = _dataset(tmp_path / "src")
    (source / "3.txt").unlink()
    (source / "empty.png").write_bytes(b"")
    kura("-w", workspace, "dataset", "add", "d", source)
    result = kura("-w", workspace, "dataset", "validate", "d", "--json")
    assert result.exit_code == 1
    codes = sorted(p["code"] for p in result.json()["blocking"])
    assert "missing-caption" in codes and "empty-file" in codes
    assert all(p["fix"] for p in result.json()["blocking"])


def test_inspect_a_path_needs_no_workspace(kura, tmp_path: Path, monkeypatch) -> None:
    source = _dataset(tmp_path / "loose")
    monkeypatch.chdir(tmp_path)
    result = kura("dataset", "inspect", source, "--json")
    assert result.exit_code == 0
    assert result.json()["counts"]["captions"] == 5


def test_unknown_dataset_is_exit_6_with_hint(kura, workspace: Path) -> None:
    result = kura("-w", workspace, "dataset", "validate", "nope", "--json")
    assert result.exit_code == 6
    assert "kura dataset add" in result.json()["error"]["hint"]


def test_bad_resolution_is_a_usage_error(kura, workspace: Path, tmp_path: Path) -> None:
    result = kura("-w", workspace, "dataset", "inspect", tmp_path, "--resolution", "big", "--json")
    assert result.exit_code == 2
