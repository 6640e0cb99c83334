"""Musubi's sample-prompt syntax (``training/sampling_prompts.py``): drafted prompts are text
only (issue 23 item 9), image-to-video models sample from a start image (item 2).

The tests at the end run Musubi's own ``line_to_prompt_dict`` (pure Python; ``toml`` is
served as a placeholder when it is missing) against Kura's reading, from the checkout of
conftest's ``musubi_harness``: the installed environment's, or ``KURA_MUSUBI_SRC`` (e.g.
``../shared/trainers/musubi-tuner-0.3.4/src``); skipped without either, failed under CI.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from musubi_cases import make_inputs, make_spec, video_dataset
from musubi_trainer_env import Harness

from kura.backends.musubi import compile_run
from kura.backends.musubi.backend import BACKEND
from kura.backends.musubi.estimator.sampling import parse_prompt
from kura.backends.musubi.prompts import OPTIONS, drafted_line, pieces, read_options, text_only
from kura.errors import SpecError

ATTACK = "myaku walking --s 5000 --f 999 --i /etc/passwd"


def test_a_caption_with_option_syntax_is_drafted_as_text_only() -> None:
    line = BACKEND.sample_prompt(ATTACK, width=640, height=640)
    assert line == "myaku walking -s 5000 -f 999 -i /etc/passwd --w 640 --h 640"
    assert read_options(line) == {"width": "640", "height": "640"}
    sample = parse_prompt(line, "framepack")
    assert (sample.width, sample.height, sample.frames, sample.steps) == (640, 640, 1, 20)


@pytest.mark.parametrize("caption", ["I am myaku", "n 5 dogs", "W 12 wide", "ci x.png"])
def test_a_caption_musubi_reads_as_an_option_from_its_start_is_refused(caption: str) -> None:
    with pytest.raises(SpecError, match="reads as the sample-prompt option"):
        BACKEND.sample_prompt(caption, width=512, height=512)


def test_a_leading_hash_would_make_a_comment_line_and_is_dropped() -> None:
    assert text_only("#myaku selfie") == "myaku selfie"
    with pytest.raises(SpecError, match="holds no text"):
        text_only(" # # ")


def test_the_prompt_text_itself_is_read_for_options_as_musubi_does() -> None:
    # line_to_prompt_dict loops over every piece, the first one too.
    assert read_options("f 999 frames of a fox --w 512") == {"frame_count": "999", "width": "512"}
    assert parse_prompt("f 97 frames of a fox", "wan").frames == 97


_FRAGMENTS = st.sampled_from(
    [f"{flag} " for flag, _, _ in OPTIONS]
    + [f"{flag.upper()} " for flag, _, _ in OPTIONS]
    + ["--", " --", " ", "-", "12", "3.5", "1.2.3", "a", "/x y.png", "#", "myaku"]
)
"""Pieces of Musubi's option syntax (every flag, either case, the separator, values)."""
CAPTIONS = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=4)), max_size=14).map("".join)
"""Caption text full of option syntax, and any other text between it."""


@settings(max_examples=400, deadline=None)
@given(CAPTIONS)
def test_any_drafted_line_carries_only_its_size(text: str) -> None:
    try:
        line = drafted_line(text, width=512, height=768)
    except SpecError:
        return
    assert read_options(line) == {"width": "512", "height": "768"}
    assert pieces(line)[0].text == text_only(text)
    assert "\n" not in line and not line.startswith("#")


# --- image-to-video sampling needs a start image (item 2) ------------------------------


@pytest.mark.parametrize(
    ("architecture", "version", "source"),
    [
        ("framepack", None, "fpack_train_network.py:100-101"),
        ("framepack", "f1", "fpack_train_network.py:100-101"),
        ("wan", "i2v-14B", "wan_train_network.py:322-323"),
        ("wan", "i2v-A14B", "wan_train_network.py:322-323"),
        ("hunyuan_video_1_5", "i2v", "hv_1_5_train_network.py:136-137"),
    ],
)
def test_an_image_to_video_prompt_without_a_start_image_is_refused(
    architecture: str, version: str | None, source: str
) -> None:
    spec = make_spec(
        {"training": {"sample_prompts": ["a fox --w 512 --h 512"], "sample_every_n_epochs": 1}},
        datasets=[{"name": "clips", "resolution": [640, 640], "frames": [45], "max_frames": 97}],
    )
    if architecture == "framepack":
        spec = make_spec(
            {"training": {"sample_prompts": ["a fox"], "sample_every_n_epochs": 1}},
            datasets=[{"name": "clips", "resolution": [640, 640], "max_frames": 97}],
        )
    single = () if version == "i2v-A14B" else ("dit_high_noise",)
    inputs = make_inputs(architecture, version, [video_dataset()], drop_roles=single)
    with pytest.raises(SpecError, match=source) as refused:
        compile_run(spec, inputs)
    assert "--i" in (refused.value.hint or "")
    given_image = spec.model_copy(
        update={
            "training": spec.training.model_copy(
                update={"sample_prompts": ["a fox --i /pictures/start.png"]}
            )
        }
    )
    compiled = compile_run(given_image, inputs)
    assert "--i /kura/sample-inputs/00-start.png" in compiled.files["sample_prompts.txt"]


def test_a_text_to_video_prompt_needs_no_start_image() -> None:
    spec = make_spec(
        {"training": {"sample_prompts": ["a fox"], "sample_every_n_epochs": 1}},
        datasets=[{"name": "clips", "resolution": [640, 640], "frames": [45]}],
    )
    compile_run(
        spec, make_inputs("wan", "t2v-14B", [video_dataset()], drop_roles=("dit_high_noise",))
    )


# --- Musubi's own parser (opt-in) --------------------------------------------------------


@pytest.fixture(scope="session")
def musubi_parser(musubi_harness: Harness) -> Callable[[str], dict[str, Any]]:
    """Musubi's own ``line_to_prompt_dict``, from the checkout the harnesses run (skipped
    without one, failed under ``CI=true``: conftest's ``musubi_harness``)."""
    path = Path(musubi_harness.source) / "musubi_tuner" / "training" / "sampling_prompts.py"
    if "toml" not in sys.modules and importlib.util.find_spec("toml") is None:
        sys.modules["toml"] = types.ModuleType("toml")  # only .toml prompt files use it
    spec = importlib.util.spec_from_file_location("musubi_sampling_prompts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parse: Callable[[str], dict[str, Any]] = module.line_to_prompt_dict
    return parse


def _as_musubi(key: str, value: str) -> Any:
    if key in ("width", "height", "frame_count", "seed"):
        return int(value)
    if key == "sample_steps":
        return max(1, min(1000, int(value)))
    if key in ("guidance_scale", "discrete_flow_shift", "cfg_scale"):
        return float(value)
    return value


@settings(max_examples=400, deadline=None)
@given(st.lists(_FRAGMENTS, max_size=14).map("".join))
def test_kura_reads_a_prompt_line_as_musubi_does(
    musubi_parser: Callable[[str], dict[str, Any]], line: str
) -> None:
    theirs = musubi_parser(line.strip())
    ours: dict[str, Any] = {"prompt": pieces(line)[0].text}
    for key, value in read_options(line).items():
        if isinstance(value, list):
            ours[key] = value
            continue
        try:
            ours[key] = _as_musubi(key, value)
        except ValueError:  # Musubi logs the error and skips the piece
            continue
    assert ours == theirs


@settings(max_examples=400, deadline=None)
@given(CAPTIONS)
def test_musubi_reads_a_drafted_line_as_text_and_its_size_only(
    musubi_parser: Callable[[str], dict[str, Any]], text: str
) -> None:
    """A caption full of option syntax, drafted (or refused), through Musubi's own
    ``line_to_prompt_dict`` after ``load_prompts``' strip (sampling_prompts.py:14-100,
    :103-107): the prompt text and ``--w``/``--h``, no other option."""
    try:
        line = drafted_line(text, width=512, height=768)
    except SpecError:
        return
    assert not line.startswith("#")  # load_prompts would drop it as a comment
    theirs = musubi_parser(line.strip())
    assert theirs == {"prompt": text_only(text), "width": 512, "height": 768}


def test_the_drafted_golden_prompt_is_what_run_new_drafts() -> None:
    golden = Path(__file__).parent / "golden" / "zimage-plain-drafted-sampling"
    line = (golden / "sample_prompts.txt").read_text(encoding="utf-8").strip()
    assert BACKEND.sample_prompt(ATTACK, width=1024, height=1024) == line
