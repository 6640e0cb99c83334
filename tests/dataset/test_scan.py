"""Folder walking: counts, formats, odd names, hidden files, symlinks and bad paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kura.dataset import inspect_dataset
from kura.errors import InvalidInput, NotFound


def codes(result, path: str) -> set[str]:
    return {p.code for p in result.problems if p.path == path}


def test_counts_and_formats(build) -> None:
    build.image("a.jpg", seed=1)
    build.image("b.JPG", seed=2)
    build.image("c.png", seed=3)
    build.image("d.webp", seed=4)
    build.image("e.bmp", seed=5)
    (build.root / "notes.md").write_text("hello")
    (build.root / ".hidden.png").write_bytes(b"")
    result = inspect_dataset(build.root).to_dict()
    assert result["counts"]["images"] == 5
    assert result["counts"]["captions"] == 5
    assert result["counts"]["videos"] == 0
    assert result["counts"]["other_files"] == 1
    assert result["formats"] == {".bmp": 1, ".jpg": 2, ".png": 1, ".webp": 1}
    assert result["problems"] == []
    assert result["root"] == str(build.root)


def test_mixed_case_and_foreign_extensions_are_unsupported(build) -> None:
    build.image("a.png")
    build.image("b.Png", seed=2)
    build.raw("c.gif", b"GIF89a")
    result = inspect_dataset(build.root)
    assert result.to_dict()["counts"]["images"] == 1
    assert codes(result, "b.Png") == {"unsupported-format"}
    assert codes(result, "c.gif") == {"unsupported-format"}
    assert {p.path for p in result.blocking_problems()} == {"b.Png", "c.gif"}


def test_odd_file_names(build) -> None:
    names = ["with space.png", 'quote\'s "x".png', "new\nline.png", "-dash.png", "ünï.png"]
    for seed, name in enumerate(names):
        build.image(name, seed=seed + 10)
    result = inspect_dataset(build.root)
    assert result.to_dict()["counts"]["images"] == len(names)
    assert result.to_dict()["counts"]["captions"] == len(names)
    assert result.problems == ()


def test_nested_media_and_symlink_loop(build) -> None:
    build.image("top.png")
    sub = build.root / "sub"
    sub.mkdir()
    build.image("sub/deep.png", seed=5)
    os.symlink(build.root, sub / "loop")
    os.symlink("self", build.root / "self")
    result = inspect_dataset(build.root)
    assert result.to_dict()["counts"]["images"] == 1
    assert [p.path for p in result.problems if p.code == "nested-media"] == ["sub/deep.png"]


def test_a_symlinked_folder_is_never_entered(build, tmp_path: Path) -> None:
    """As `dataset add` neither checks nor copies a symlinked folder, inspect does not walk
    one: a link to a folder outside (or to `/`) never walks the filesystem."""
    outside = tmp_path / "outside"
    (outside / "deeper").mkdir(parents=True)
    (outside / "deeper" / "far.png").write_bytes(b"not read")
    build.image("top.png")
    os.symlink(outside, build.root / "escape")
    sub = build.root / "sub"
    sub.mkdir()
    os.symlink(outside, sub / "escape-too")
    build.image("sub/deep.png", seed=5)
    result = inspect_dataset(build.root)
    assert [p.path for p in result.problems if p.code == "nested-media"] == ["sub/deep.png"]


def test_symlinked_image_is_read_and_dangling_one_is_broken(build, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.png"
    build.image("a.png")
    elsewhere.write_bytes((build.root / "a.png").read_bytes())
    os.symlink(elsewhere, build.root / "linked.png")
    os.symlink(tmp_path / "missing.png", build.root / "dangling.png")
    build.caption("linked", "linked caption")
    build.caption("dangling", "dangling caption")
    result = inspect_dataset(build.root)
    assert codes(result, "linked.png") == {"duplicate"}
    assert codes(result, "dangling.png") == {"broken-media"}


def test_missing_folder_raises_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as info:
        inspect_dataset(tmp_path / "nope")
    assert "nope" in info.value.message
    assert info.value.path == str(tmp_path / "nope")


def test_file_instead_of_folder_raises_invalid_input(tmp_path: Path) -> None:
    target = tmp_path / "file.png"
    target.write_bytes(b"x")
    with pytest.raises(InvalidInput) as info:
        inspect_dataset(target)
    assert info.value.hint


def test_bad_caption_extension(build) -> None:
    build.image("a.png")
    with pytest.raises(InvalidInput):
        inspect_dataset(build.root, caption_ext="txt")
    with pytest.raises(InvalidInput):
        inspect_dataset(build.root, caption_ext=".png")


def test_other_caption_extension(build) -> None:
    build.image("a.png", caption=None)
    build.caption("a", "hello", ext=".caption")
    result = inspect_dataset(build.root, caption_ext=".caption")
    assert result.problems == ()
    assert result.to_dict()["counts"]["captions"] == 1


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab.ü\udcff", max_size=8))
def test_a_name_splits_as_os_path_splitext_splits_it(name: str) -> None:
    from kura.dataset.scan import _split

    assert _split(name) == os.path.splitext(name)
