"""Captions: missing, empty, wrong encoding, orphans, statistics and the trigger word."""

from __future__ import annotations

from pathlib import Path

from kura.dataset import inspect_dataset
from kura.dataset.captions import decode_caption, find_trigger


def by_code(result) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for problem in result.problems:
        found.setdefault(problem.code, []).append(problem.path)
    return found


def test_caption_problems(build) -> None:
    build.image("ok.png", seed=1, caption="a red car")
    build.image("nocap.png", seed=2, caption=None)
    build.image("empty.png", seed=3, caption="  \n")
    build.image("latin.png", seed=4, caption=None)
    build.caption("latin", "café crème".encode("latin-1"))
    build.image("bom.png", seed=5, caption=None)
    build.caption("bom", b"\xef\xbb\xbfa blue car")
    build.caption("orphan", "nobody")
    result = inspect_dataset(build.root)
    problems = by_code(result)
    assert problems["missing-caption"] == ["nocap.png"]
    assert problems["empty-caption"] == ["empty.txt"]
    assert sorted(problems["caption-encoding"]) == ["bom.txt", "latin.txt"]
    assert problems["orphan-caption"] == ["orphan.txt"]
    section = result.to_dict()["captions"]
    assert section["missing"] == 1
    assert section["empty"] == 1
    assert section["non_utf8"] == 1
    assert section["bom"] == 1
    assert section["orphans"] == ["orphan.txt"]
    blocking = {p.code for p in result.blocking_problems()}
    assert blocking == {"missing-caption", "caption-encoding"}
    for problem in result.problems:
        assert problem.fix.endswith(".")


def test_latin1_message_names_the_encoding(build) -> None:
    build.image("a.png", caption=None)
    build.caption("a", "naïve".encode("latin-1"))
    (problem,) = inspect_dataset(build.root).problems
    assert "Latin-1" in problem.message
    assert "UTF-8" in problem.fix


def test_decode_caption_classifies_bytes() -> None:
    assert decode_caption(b" hi \n") == ("utf-8", "hi")
    assert decode_caption("é".encode("latin-1")) == ("latin-1", "é")
    assert decode_caption(b"\x00\x01\x02\xff") == ("binary", None)
    assert decode_caption(b"\xef\xbb\xbfx") == ("utf-8-bom", "x")


def test_trigger_found_in_38_of_40(build) -> None:
    for i in range(40):
        text = f"myaku, a woman in a garden, pose {i}" if i < 38 else f"a woman, pose {i}"
        build.caption(f"img{i:02d}", text)
        build.image(f"img{i:02d}.png", (32, 32), seed=i, caption=None)
    result = inspect_dataset(build.root).to_dict()
    assert result["trigger"] == {
        "word": "myaku",
        "count": 38,
        "total": 40,
        "missing": ["img38.txt", "img39.txt"],
    }
    question = next(q for q in result["questions"] if q["key"] == "intent.trigger")
    assert question["options"] == ["myaku", "none"]
    assert "starts 38 of 40" in question["evidence"]
    assert result["captions"]["leading_words"][0] == {"word": "myaku", "count": 38}
    assert result["captions"]["words"]["max"] == 8


def test_no_trigger_when_captions_vary(build) -> None:
    subjects = ["a dog on grass", "red car at night", "tall building", "bowl of fruit"]
    for i, text in enumerate(subjects * 2):
        build.image(f"v{i}.png", (32, 32), seed=100 + i, caption=f"{text} number {i}")
    result = inspect_dataset(build.root).to_dict()
    assert result["trigger"] is None
    question = next(q for q in result["questions"] if q["key"] == "intent.trigger")
    assert question["options"][-1] == "none"
    assert len(question["options"]) >= 2


def test_generic_leading_word_is_not_a_trigger() -> None:
    texts = {f"{i}.txt": f"woman standing, {i}" for i in range(10)}
    assert find_trigger(texts) is None


def test_filler_is_skipped_before_the_trigger() -> None:
    texts = {f"{i}.txt": f"a photo of ohwx cat, angle {i}" for i in range(5)}
    trigger = find_trigger(texts)
    assert trigger is not None
    assert (trigger.word, trigger.count, trigger.total, trigger.leading) == ("ohwx", 5, 5, 5)


def test_duplicate_captions_and_token_estimate(build) -> None:
    build.image("a.png", seed=1, caption="same words here")
    build.image("b.png", seed=2, caption="Same  words here")
    build.image("c.png", seed=3, caption=" ".join(["word"] * 100))
    section = inspect_dataset(build.root).to_dict()["captions"]
    assert section["duplicate_groups"] == [["a.txt", "b.txt"]]
    assert section["tokens_estimate"]["max"] == 130
    assert section["tokens_estimate"]["over_77"] == 1
    assert section["words"] == {"min": 3, "median": 3, "max": 100}


def test_a_caption_without_the_recorded_trigger_is_a_warning_once_it_is_recorded(
    tmp_path: Path,
) -> None:
    """Issue 26: the inspection found the trigger, yet a caption without it never became a
    warning in ``dataset validate`` or the plan, even after ``intent.trigger`` was set."""
    from tests.builders import character_workspace

    from kura.dataset.registry import set_dataset_values, validate_dataset
    from kura.runs.new import create_run
    from kura.runs.plan import plan_run

    workspace = character_workspace(tmp_path)
    caption = workspace.dataset_dir("myaku") / "media" / "2.txt"
    if not caption.exists():  # a linked dataset: the caption is in the source folder
        caption = tmp_path / "incoming" / "2.txt"
    caption.write_text("a portrait in soft light\n")
    before = validate_dataset(workspace, "myaku")
    assert [w["code"] for w in before.warnings if w["code"] == "missing-trigger"] == []
    set_dataset_values(workspace, "myaku", ["intent.trigger=myaku"])
    after = validate_dataset(workspace, "myaku")
    assert after.ok
    (warning,) = [w for w in after.warnings if w["code"] == "missing-trigger"]
    assert warning["path"] == "2.txt" and "'myaku'" in warning["message"]
    run = create_run(workspace, datasets=["myaku"], base="flux2-klein-base-4b").run_id
    (check,) = [
        c for c in plan_run(workspace, run, gpu="rtx-4090").checks if c.check == "dataset myaku"
    ]
    assert "1 caption(s) lack the trigger word: 2.txt" in check.detail
    set_dataset_values(workspace, "myaku", ["intent.trigger=none"])
    assert not [
        w for w in validate_dataset(workspace, "myaku").warnings if w["code"] == "missing-trigger"
    ]
