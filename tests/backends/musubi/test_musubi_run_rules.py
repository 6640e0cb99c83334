"""Rules of Musubi's own code that a parsing check cannot see (issue 11 items 3-6, 9, 13, 15).

Each test names the trainer code it follows; each fails without the rule it pins.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from typing import Any

import pytest
from musubi_cases import image_dataset, make_inputs, make_spec, video_dataset

from kura.backends.base import ClipFact
from kura.backends.musubi import compile_run
from kura.backends.musubi.adapters import MUSUBI_RELEASE
from kura.errors import KuraError, SpecError, Unsupported


def config(**values: Any) -> dict[str, Any]:
    return {"backend": {"config": values}}


def refused(
    architecture: str,
    version: str | None,
    spec: dict[str, Any] | None = None,
    *,
    spec_datasets: list[dict] | None = None,
    datasets: list | None = None,
    error: type[KuraError] = SpecError,
    **inputs_kw: Any,
) -> KuraError:
    run = make_spec(spec, datasets=spec_datasets)
    inputs = make_inputs(architecture, version, datasets, **inputs_kw)
    with pytest.raises(error) as caught:
        compile_run(run, inputs)
    assert caught.value.hint
    return caught.value


def compiled(architecture: str, version: str | None, spec=None, **kw: Any):
    spec_datasets = kw.pop("spec_datasets", None)
    datasets = kw.pop("datasets", None)
    return compile_run(
        make_spec(spec, datasets=spec_datasets), make_inputs(architecture, version, datasets, **kw)
    )


def toml_of(result) -> dict[str, Any]:
    return tomllib.loads(result.files["dataset.toml"])


_CUSTOM_IMAGE = "example/musubi-xformers:0.3.4"
_FP_HEAD = [{"name": "clips", "resolution": [640, 640], "frames": [37], "frame_extraction": "head"}]
_HV_VIDEO = [{"name": "clips", "resolution": [960, 544], "frames": [1, 25]}]


# -- item 3: attention libraries the image does not have ---------------------------------


@pytest.mark.parametrize("attention", ["xformers", "flash_attn"])
def test_an_attention_library_kuras_image_lacks_is_refused(attention: str) -> None:
    err = refused("krea2", None, config(attention=attention, split_attn=True), error=Unsupported)
    assert attention.split("_")[0] in err.message and "sdpa" in err.hint


def test_kuras_own_image_named_by_the_workspace_is_refused_too() -> None:
    """kura.toml's default musubi_image is Kura's image: naming it is not a custom image."""
    err = refused(
        "krea2",
        None,
        config(attention="xformers", split_attn=True),
        container_image=f"kura/musubi-tuner:{MUSUBI_RELEASE}",
        error=Unsupported,
    )
    assert "xformers" in err.message


def test_a_custom_image_or_the_host_gets_a_warning_instead() -> None:
    result = compiled("krea2", None, config(attention="xformers"), container_image=_CUSTOM_IMAGE)
    assert any("xformers" in w and _CUSTOM_IMAGE in w for w in result.warnings)
    host = compiled(
        "krea2", None, {**config(attention="xformers"), "execution": {"executor": "host"}}
    )
    assert any("xformers" in w for w in host.warnings)


# -- item 4: split attention where Musubi asserts or its docs say it errors --------------


@pytest.mark.parametrize(
    ("architecture", "version", "datasets", "spec_datasets"),
    [
        ("hunyuan_video", None, [video_dataset(fps=24.0)], _HV_VIDEO),
        ("hunyuan_video_1_5", "t2v", None, None),
        ("zimage", None, None, None),
    ],
)
def test_xformers_without_split_attn_is_refused(architecture, version, datasets, spec_datasets):
    kwargs = {"datasets": datasets, "spec_datasets": spec_datasets}
    err = refused(
        architecture, version, config(attention="xformers"), container_image=_CUSTOM_IMAGE, **kwargs
    )
    assert "split_attn" in err.message
    ok = compiled(
        architecture,
        version,
        config(attention="xformers", split_attn=True),
        container_image=_CUSTOM_IMAGE,
        **kwargs,
    )
    assert "--split_attn" in ok.steps[-1].argv


def test_framepack_batch_over_one_needs_split_attn() -> None:
    spec = {
        **config(batch_size=2),
        "training": {"effective_batch": 2},
    }
    datasets = _FP_HEAD
    err = refused("framepack", None, spec, spec_datasets=datasets, datasets=[video_dataset()])
    assert "split_attn" in err.message
    spec["backend"]["config"]["split_attn"] = True
    compiled("framepack", None, spec, spec_datasets=datasets, datasets=[video_dataset()])


# -- item 5: LoHa/LoKr where network_arch.py cannot detect the model ----------------------


@pytest.mark.parametrize(("architecture", "version"), [("krea2", None), ("hidream_o1", "full")])
@pytest.mark.parametrize("module", ["networks.loha", "networks.lokr"])
def test_loha_lokr_on_an_undetectable_architecture_is_refused(architecture, version, module):
    spec = {"training": {"network": {"module": module}}}
    err = refused(architecture, version, spec, error=Unsupported)
    assert "network_arch.py" in err.message
    assert f"networks.lora_{architecture}" in err.hint


# -- item 6: FramePack's one-section minimum ----------------------------------------------


def test_framepack_frames_below_one_section_are_refused() -> None:
    err = refused(
        "framepack",
        None,
        spec_datasets=[{**_FP_HEAD[0], "frames": [25, 45]}],
        datasets=[video_dataset()],
    )
    assert "37" in err.message and "[25]" in err.message
    err = refused(
        "framepack",
        None,
        spec_datasets=[{"name": "clips", "resolution": [640, 640], "max_frames": 33}],
        datasets=[video_dataset()],
    )
    assert "max_frames 33" in err.message


def test_framepack_clips_shorter_than_a_section_are_named() -> None:
    clips = (ClipFact("long.mp4", 120, 30.0), ClipFact("short.mp4", 30, 30.0))
    err = refused(
        "framepack",
        None,
        spec_datasets=[{"name": "clips", "resolution": [640, 640], "max_frames": 145}],
        datasets=[replace(video_dataset(), clips=clips)],
    )
    assert "short.mp4" in err.message and "long.mp4" not in err.message


def test_framepack_fps_conversion_can_make_a_clip_too_short() -> None:
    """60 fps -> 30 fps halves the frames: a 60-frame clip gives 30 frames, under 37."""
    clips = (ClipFact("fast.mp4", 60, 60.0),)
    err = refused(
        "framepack",
        None,
        spec_datasets=[{"name": "clips", "resolution": [640, 640], "max_frames": 145}],
        datasets=[replace(video_dataset(fps=60.0), clips=clips)],
    )
    assert "fast.mp4" in err.message


# -- item 9: fps ---------------------------------------------------------------------------


def test_source_fps_is_written_per_dataset() -> None:
    result = compiled(
        "wan",
        "t2v-14B",
        spec_datasets=_HV_VIDEO,
        datasets=[video_dataset(fps=24.0)],
        drop_roles=("image_encoder", "dit_high_noise"),
    )
    assert toml_of(result)["datasets"][0]["source_fps"] == 24.0


def test_mixed_frame_rates_in_one_dataset_are_refused() -> None:
    clips = (ClipFact("a.mp4", 100, 24.0), ClipFact("b.mp4", 100, 30.0))
    err = refused(
        "wan",
        "t2v-14B",
        spec_datasets=_HV_VIDEO,
        datasets=[replace(video_dataset(fps=None), clips=clips)],
        drop_roles=("image_encoder", "dit_high_noise"),
    )
    assert "a.mp4" in err.message and "b.mp4" in err.message and "split" in err.hint


def test_a_slower_source_than_the_model_is_called_out() -> None:
    result = compiled(
        "framepack",
        None,
        spec_datasets=_FP_HEAD,
        datasets=[video_dataset(fps=24.0)],
    )
    assert any("never adds" in w and "1.25x slow" in w for w in result.warnings)


# -- item 13: a folder of images and videos -------------------------------------------------


def test_a_mixed_folder_becomes_a_video_and_an_image_entry() -> None:
    result = compiled(
        "wan",
        "t2v-14B",
        spec_datasets=_HV_VIDEO,
        datasets=[replace(video_dataset(fps=16.0), images=3)],
        drop_roles=("image_encoder", "dit_high_noise"),
    )
    entries = toml_of(result)["datasets"]
    assert [("video_directory" in e, "image_directory" in e) for e in entries] == [
        (True, False),
        (False, True),
    ]
    assert entries[0]["video_directory"] == entries[1]["image_directory"]
    assert entries[0]["cache_directory"] != entries[1]["cache_directory"]


def test_a_mixed_folder_is_refused_where_images_cannot_train() -> None:
    err = refused(
        "framepack",
        None,
        spec_datasets=_FP_HEAD,
        datasets=[replace(video_dataset(), images=2)],
    )
    assert "2 image(s)" in err.message


# -- item 15: Qwen-Image-Edit control resolution ----------------------------------------------


@pytest.mark.parametrize("version", ["edit", "edit-2509", "edit-2511"])
def test_qwen_image_edit_controls_default_to_1024(version: str) -> None:
    result = compiled(
        "qwen_image",
        version,
        spec_datasets=[{"name": "pairs", "resolution": [768, 768]}],
        datasets=[image_dataset("pairs", control=True, control_count=1)],
    )
    assert toml_of(result)["datasets"][0]["control_resolution"] == [1024, 1024]
    unresized = compiled(
        "qwen_image",
        version,
        spec_datasets=[{"name": "pairs", "resolution": [768, 768], "no_resize_control": True}],
        datasets=[image_dataset("pairs", control=True, control_count=1)],
    )
    assert "control_resolution" not in toml_of(unresized)["datasets"][0]


# -- item 16: Wan 2.2 precision and single-expert training -------------------------------
def _flag(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_wan22_bundles_draft_fp16_mixed_precision_with_its_source() -> None:
    # wan_train_network.py: "DiT weights are in fp16, mixed precision must be fp16 or no".
    from kura.backends.registry import get_backend
    from kura.models.bundles import get_bundle

    musubi = get_backend("musubi-tuner")
    for bundle_id in ("wan2.2-t2v-a14b", "wan2.2-i2v-a14b"):
        drafted = musubi.draft_config(get_bundle(bundle_id), {})
        assert drafted.config["mixed_precision"] == "fp16"
        assert "fp16" in drafted.reasons["mixed_precision"]
        assert "docs/wan.md" in drafted.reasons["mixed_precision"]
    assert musubi.draft_config(get_bundle("wan2.1-t2v-14b"), {}).config["mixed_precision"] == (
        "bf16"
    )
    kept = musubi.draft_config(
        get_bundle("wan2.2-t2v-a14b"), {"backend.config.mixed_precision": "no"}
    )
    assert "mixed_precision" not in kept.config


def test_an_effective_batch_a_person_sets_is_reached_by_accumulation() -> None:
    """rules.check_batch refuses micro × accumulation × GPUs ≠ the effective batch; the draft
    meets a set effective batch with accumulation over the micro-batch."""
    from kura.backends.registry import get_backend
    from kura.models.bundles import get_bundle

    musubi = get_backend("musubi-tuner")
    bundle = get_bundle("zimage-base")
    four = musubi.draft_config(bundle, {"training.effective_batch": 4})
    assert (four.config["batch_size"], four.config["gradient_accumulation_steps"]) == (1, 4)
    assert "training.effective_batch 4" in four.reasons["gradient_accumulation_steps"]
    micro = musubi.draft_config(
        bundle, {"training.effective_batch": 4, "backend.config.batch_size": 2}
    )
    assert micro.config["gradient_accumulation_steps"] == 2
    odd = musubi.draft_config(
        bundle, {"training.effective_batch": 3, "backend.config.batch_size": 2}
    )
    assert odd.config["gradient_accumulation_steps"] == 1  # left for check_batch to refuse
    assert musubi.draft_config(bundle, {}).config["gradient_accumulation_steps"] == 1


@pytest.mark.parametrize(
    ("version", "expert", "low", "high"),
    [
        ("t2v-A14B", "low", "0", "875"),
        ("t2v-A14B", "high", "875", "1000"),
        ("i2v-A14B", "low", "0", "900"),
        ("i2v-A14B", "high", "900", "1000"),
    ],
)
def test_a_selected_wan22_expert_is_passed_alone_with_its_timestep_range(
    version: str, expert: str, low: str, high: str
) -> None:
    # docs/wan.md: one expert trains as --dit, with the table's min/max timestep and
    # --preserve_distribution_shape.
    result = compiled(
        "wan",
        version,
        config(dit_expert=expert),
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        roles={
            "dit": "/m/low.safetensors",
            "dit_high_noise": "/m/high.safetensors",
            "vae": "/m/vae.safetensors",
            "text_encoder": "/m/t5.pth",
        },
    )
    argv = list(result.steps[-1].argv)
    assert _flag(argv, "--dit") == f"/m/{expert}.safetensors"
    assert "--dit_high_noise" not in argv and "--timestep_boundary" not in argv
    assert (_flag(argv, "--min_timestep"), _flag(argv, "--max_timestep")) == (low, high)
    assert "--preserve_distribution_shape" in argv


def test_only_the_high_noise_expert_given_trains_it_alone() -> None:
    result = compiled(
        "wan",
        "t2v-A14B",
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        roles={
            "dit_high_noise": "/m/high.safetensors",
            "vae": "/m/vae.safetensors",
            "text_encoder": "/m/t5.pth",
        },
    )
    argv = list(result.steps[-1].argv)
    assert _flag(argv, "--dit") == "/m/high.safetensors"
    assert _flag(argv, "--min_timestep") == "875"


def test_an_explicit_timestep_range_overrides_the_experts() -> None:
    result = compiled(
        "wan",
        "t2v-A14B",
        {**config(dit_expert="low"), "training": {"min_timestep": 100, "max_timestep": 800}},
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        drop_roles=("image_encoder",),
    )
    argv = list(result.steps[-1].argv)
    assert (_flag(argv, "--min_timestep"), _flag(argv, "--max_timestep")) == ("100", "800")


def test_dit_expert_is_refused_on_a_single_dit_model_and_checked() -> None:
    error = refused("wan", "t2v-14B", config(dit_expert="low"), drop_roles=("image_encoder",))
    assert "dual-DiT" in error.message
    error = refused("wan", "t2v-A14B", config(dit_expert="middle"), drop_roles=("image_encoder",))
    assert "low, high" in error.message
