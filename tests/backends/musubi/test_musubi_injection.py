"""Hostile names, paths and values cannot inject into argv or the dataset TOML.

Paths stay exactly one argv element right after their flag; the TOML parses back to the
same values. Values argparse would read as options (leading ``-``) are refused, never
rewritten.
"""

from __future__ import annotations

import posixpath
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from musubi_cases import MUSUBI_DIR, make_spec

from kura.backends.musubi import CompileInputs, DatasetInput, compile_run
from kura.errors import SpecError

HOSTILE_PIECES = [
    " ",
    '"',
    "'",
    "\n",
    "\r\n",
    "\t",
    "$(rm -rf /)",
    "`id`",
    "; echo hi",
    "--dit",
    "=",
    "\\",
    "]]\n[[datasets]]\nimage_directory = '/etc'",
    "#",
    "{model.dit}",
    "é ü 漢",
]
hostile_text = st.lists(
    st.one_of(st.sampled_from(HOSTILE_PIECES), st.text(min_size=1, max_size=8)),
    min_size=1,
    max_size=5,
).map("".join)
path = hostile_text.filter(lambda s: "\x00" not in s).map(lambda s: "/x/" + s)
name = hostile_text.filter(lambda s: s.strip() != "")


def compile_with(dataset_name: str, media: str, control: str, dit: str, run_dir: str):
    spec = make_spec(datasets=[{"name": dataset_name, "resolution": [1024, 1024]}])
    dataset = DatasetInput(
        name=dataset_name,
        media_dir=media,
        caption_ext=".txt",
        control_dir=control,
        kind="image",
        control_count=1,
    )
    inputs = CompileInputs(
        architecture="flux_kontext",
        model_version=None,
        model_paths={
            "dit": dit,
            "vae": "/m/vae",
            "text_encoder": "/m/t5",
            "text_encoder_2": "/m/clip",
        },
        datasets=[dataset],
        run_dir=run_dir,
        trainer_dir=MUSUBI_DIR,
    )
    return compile_run(spec, inputs)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(dataset_name=name, media=path, control=path, dit=path, run_dir=path)
def test_hostile_values_cannot_inject(
    dataset_name: str, media: str, control: str, dit: str, run_dir: str
) -> None:
    if media == control:
        control = control + "-c"
    result = compile_with(dataset_name, media, control, dit, run_dir)
    parsed = tomllib.loads(result.files["dataset.toml"])
    assert len(parsed["datasets"]) == 1
    entry = parsed["datasets"][0]
    assert entry["image_directory"] == media
    assert entry["control_directory"] == control
    family = posixpath.join(run_dir, "cache", "flux_kontext") + "/"
    assert entry["cache_directory"].startswith(family + "00-")
    assert "/" not in entry["cache_directory"][len(family) :]
    assert set(parsed) == {"general", "datasets"}
    train = result.steps[-1].argv
    assert train[train.index("--dit") + 1] == dit
    assert train.count("--dit") == 1
    dataset_config = posixpath.join(run_dir, "compiled", "dataset.toml")
    output_dir = posixpath.join(run_dir, "output")
    assert train[train.index("--dataset_config") + 1] == dataset_config
    assert train[train.index("--output_dir") + 1] == output_dir
    script = train.index("src/musubi_tuner/flux_kontext_train_network.py")
    flags = [a for a in train[script:] if a.startswith("--")]
    assert len(flags) == len(set(flags)), "no script flag appears twice"
    expected_values = {dit, dataset_config, output_dir, posixpath.join(run_dir, "logs")}
    assert expected_values <= set(train)


@given(bad=st.sampled_from(["--fp8_base", "-x", "--output_dir=/tmp"]))
def test_option_looking_paths_are_refused(bad: str) -> None:
    with pytest.raises(SpecError, match="starts with '-'"):
        compile_with("d", "/data/d", "/data/c", bad, "/run")


@settings(max_examples=100, deadline=None)
@given(
    args=st.lists(
        hostile_text.filter(lambda s: not s.startswith("-") and "\x00" not in s), max_size=4
    )
)
def test_list_values_stay_separate_elements(args: list[str]) -> None:
    spec = make_spec({"training": {"optimizer_args": args}})
    inputs = CompileInputs(
        architecture="zimage",
        model_version=None,
        model_paths={"dit": "/m/d", "vae": "/m/v", "text_encoder": "/m/t"},
        datasets=[DatasetInput("photos", "/data/photos", ".txt", None, "image")],
        run_dir="/run",
        trainer_dir=MUSUBI_DIR,
    )
    train = compile_run(spec, inputs).steps[-1].argv
    if args:
        start = train.index("--optimizer_args") + 1
        assert list(train[start : start + len(args)]) == args
        assert train[start + len(args)] == "--learning_rate"
    else:
        assert "--optimizer_args" not in train


@settings(max_examples=100, deadline=None)
@given(caption_ext=hostile_text)
def test_caption_extension_round_trips(caption_ext: str) -> None:
    spec = make_spec()
    inputs = CompileInputs(
        architecture="zimage",
        model_version=None,
        model_paths={"dit": "/m/d", "vae": "/m/v", "text_encoder": "/m/t"},
        datasets=[DatasetInput("photos", "/data/photos", caption_ext, None, "image")],
        run_dir="/run",
        trainer_dir=MUSUBI_DIR,
    )
    parsed = tomllib.loads(compile_run(spec, inputs).files["dataset.toml"])
    assert parsed["datasets"][0]["caption_extension"] == caption_ext
