"""Each impossible or wrong combination is refused at compile time, with a fix."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from musubi_cases import image_dataset, make_inputs, make_spec, video_dataset

from kura.backends.musubi import compile_run
from kura.errors import KuraError, SpecError, Unsupported


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
    assert caught.value.hint, "every refusal says how to fix it"
    return caught.value


def config(**values: Any) -> dict[str, Any]:
    return {"backend": {"config": values}}


def test_fp8_scaled_without_fp8_base() -> None:
    err = refused(
        "wan", "t2v-14B", config(fp8_scaled=True), drop_roles=("image_encoder", "dit_high_noise")
    )
    assert "fp8_scaled" in err.message
    assert "fp8_base" in err.hint


def test_plain_fp8_where_scaled_is_required() -> None:
    for arch, version in (("krea2", None), ("flux2", "dev"), ("hidream_o1", "full")):
        err = refused(arch, version, config(fp8_base=True))
        assert "scaled" in err.message


def test_fp8_scaled_on_hunyuan_video_is_an_unknown_key() -> None:
    err = refused("hunyuan_video", None, config(fp8_base=True, fp8_scaled=True))
    assert "fp8_scaled" in err.message


def test_fp8_on_ideogram_is_refused() -> None:
    err = refused("ideogram4", None, config(fp8_base=True))
    assert "fp8_base" in err.message


def test_swap_over_the_limit() -> None:
    err = refused("zimage", None, config(blocks_to_swap=29))
    assert "29" in err.message
    assert "28" in err.hint


@pytest.mark.parametrize(
    ("version", "allowed"), [("dev", 29), ("klein-base-4b", 13), ("klein-9b", 16)]
)
def test_swap_limit_depends_on_model_size(version: str, allowed: int) -> None:
    fp8 = {"fp8_base": True, "fp8_scaled": True}
    compile_run(make_spec(config(blocks_to_swap=allowed, **fp8)), make_inputs("flux2", version))
    refused("flux2", version, config(blocks_to_swap=allowed + 1, **fp8))


def test_wan_swap_limit_per_model_size() -> None:
    spec = {
        **config(blocks_to_swap=30),
    }
    refused(
        "wan",
        "t2v-1.3B",
        spec,
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        drop_roles=("image_encoder", "dit_high_noise"),
    )


def test_h2d_only_swap_needs_gradient_checkpointing() -> None:
    err = refused(
        "zimage",
        None,
        config(blocks_to_swap=10, block_swap_h2d_only=True, gradient_checkpointing=False),
    )
    assert "gradient_checkpointing" in err.message


def test_ring_size_without_h2d_only() -> None:
    refused("zimage", None, config(blocks_to_swap=10, block_swap_ring_size=1))


def test_kontext_with_two_controls() -> None:
    err = refused(
        "flux_kontext",
        None,
        spec_datasets=[{"name": "pairs"}],
        datasets=[image_dataset("pairs", control=True, control_count=2)],
    )
    assert "exactly one" in err.message


def test_kontext_without_controls() -> None:
    refused("flux_kontext", None)


def test_controls_on_an_architecture_without_them() -> None:
    refused(
        "zimage",
        None,
        spec_datasets=[{"name": "pairs"}],
        datasets=[image_dataset("pairs", control=True, control_count=1)],
    )


def test_qwen_original_edit_takes_exactly_one_control() -> None:
    refused(
        "qwen_image",
        "edit",
        spec_datasets=[{"name": "pairs"}],
        datasets=[image_dataset("pairs", control=True, control_count=3)],
    )


@pytest.mark.parametrize(("frames", "below", "above"), [(24, 21, 25), (2, 1, 5), (50, 49, 53)])
def test_frames_not_4n_plus_1(frames: int, below: int, above: int) -> None:
    err = refused(
        "hunyuan_video",
        None,
        spec_datasets=[{"name": "clips", "frames": [1, frames]}],
        datasets=[video_dataset()],
    )
    assert str(frames) in err.message
    assert f"{below} or {above}" in err.hint


def test_video_without_frames() -> None:
    refused("wan", "t2v-14B", spec_datasets=[{"name": "clips"}], datasets=[video_dataset()])


def test_chunk_extraction_with_one_frame() -> None:
    refused(
        "hunyuan_video",
        None,
        spec_datasets=[{"name": "clips", "frames": [1, 25], "frame_extraction": "chunk"}],
        datasets=[video_dataset()],
    )


def test_effective_batch_mismatch() -> None:
    err = refused(
        "zimage",
        None,
        {"training": {"effective_batch": 8}, **config(batch_size=2, gradient_accumulation_steps=2)},
    )
    assert "= 4" in err.message
    assert "gradient_accumulation_steps: 4" in err.hint


def test_effective_batch_counts_gpus() -> None:
    err = refused(
        "zimage",
        None,
        {"training": {"effective_batch": 2}, "execution": {"gpus": 2}, **config(batch_size=2)},
    )
    assert "2 GPU(s)" in err.message


def test_unknown_config_key_is_named() -> None:
    err = refused("zimage", None, config(fp8_vl=True))
    assert "fp8_vl" in err.message
    assert "fp8_llm" in err.hint


def test_wrongly_typed_config_value() -> None:
    refused("zimage", None, config(blocks_to_swap="ten"))
    refused("zimage", None, config(gradient_checkpointing=1))


def test_video_dataset_on_image_only_architecture() -> None:
    err = refused(
        "qwen_image",
        "original",
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
    )
    assert "images only" in err.message


def test_image_dataset_on_video_only_adapter() -> None:
    refused("framepack", None, error=Unsupported)


def test_video_keys_on_an_image_dataset() -> None:
    refused("zimage", None, spec_datasets=[{"name": "photos", "frames": [5]}])


def test_same_dataset_twice_at_two_resolutions() -> None:
    err = refused(
        "zimage",
        None,
        spec_datasets=[
            {"name": "photos", "resolution": [1024, 1024]},
            {"name": "photos", "resolution": [512, 512]},
        ],
    )
    assert "disjoint" in err.hint


def test_two_datasets_over_one_folder() -> None:
    first = image_dataset("a")
    second = replace(image_dataset("b"), media_dir=first.media_dir)
    refused("zimage", None, spec_datasets=[{"name": "a"}, {"name": "b"}], datasets=[first, second])


def test_sage_attention_cannot_train() -> None:
    err = refused("zimage", None, config(attention="sage_attn"))
    assert "SageAttention" in err.message


def test_attention_backend_not_available() -> None:
    refused("hidream_o1", "full", config(attention="xformers"))


def test_wan_precision_must_match_fp16_weights() -> None:
    err = refused(
        "wan",
        "t2v-14B",
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        drop_roles=("image_encoder", "dit_high_noise"),
        weight_dtypes={"dit": "fp16"},
    )
    assert "fp16" in err.hint


def test_wan_fp8_scaled_on_an_fp8_file() -> None:
    refused(
        "wan",
        "t2v-14B",
        config(fp8_base=True, fp8_scaled=True),
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        drop_roles=("image_encoder", "dit_high_noise"),
        weight_dtypes={"dit": "fp8"},
    )


def test_hv15_fp16_checkpoint_under_bf16() -> None:
    refused(
        "hunyuan_video_1_5",
        "t2v",
        weight_dtypes={"dit": "fp16"},
    )


def test_wan_dual_dit_offload_with_swap() -> None:
    err = refused(
        "wan",
        "t2v-A14B",
        config(offload_inactive_dit=True, blocks_to_swap=10),
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        drop_roles=("image_encoder",),
    )
    assert "offload" in err.message


def test_high_noise_model_on_a_single_dit_task() -> None:
    refused(
        "wan",
        "t2v-14B",
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        roles={"dit": "/m/d", "dit_high_noise": "/m/h", "vae": "/m/v", "text_encoder": "/m/t"},
    )


def test_timestep_boundary_without_dual_dit() -> None:
    refused(
        "wan",
        "t2v-A14B",
        {"training": {"timestep_boundary": 875}},
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        drop_roles=("image_encoder", "dit_high_noise"),
    )


def test_timestep_boundary_must_be_an_integer() -> None:
    with pytest.raises(ValueError, match="timestep_boundary"):
        make_spec({"training": {"timestep_boundary": 0.875}})


def test_flux2_dev_has_no_text_encoder_fp8() -> None:
    refused("flux2", "dev", config(fp8_text_encoder=True))


def test_missing_model_version() -> None:
    err = refused("qwen_image", None)
    assert "edit-2511" in err.hint


def test_unknown_model_version_is_a_table_gap() -> None:
    err = refused("qwen_image", "layered", error=Unsupported)
    assert "not a statement about Musubi" in err.hint


def test_model_version_on_an_architecture_without_one() -> None:
    refused("zimage", "turbo")


def test_missing_required_model_role() -> None:
    err = refused("krea2", None, drop_roles=("vae",))
    assert "vae" in err.message


def test_sampling_needs_its_roles() -> None:
    refused(
        "ideogram4",
        None,
        {"training": {"sample_prompts": ["a cat"], "sample_every_n_epochs": 1}},
        drop_roles=("text_encoder",),
    )


def test_sample_prompt_with_a_line_break() -> None:
    refused(
        "zimage", None, {"training": {"sample_prompts": ["a\n--flag"], "sample_every_n_epochs": 1}}
    )


def test_epochs_and_steps_both_set() -> None:
    err = refused("zimage", None, {"training": {"max_steps": 100}})
    assert "epochs: null" in err.hint


def test_constant_scheduler_with_warmup() -> None:
    refused("zimage", None, {"training": {"warmup_steps": 10}})


def test_unknown_timestep_sampling() -> None:
    refused("zimage", None, {"training": {"timestep_sampling": "cosine"}})


def test_weighting_other_than_none_on_hidream() -> None:
    refused("hidream_o1", "full", {"training": {"weighting_scheme": "logit_normal"}})


def test_hidream_resolution_not_multiple_of_32() -> None:
    refused("hidream_o1", "full", spec_datasets=[{"name": "photos", "resolution": [1000, 1000]}])


def test_hidream_mixed_t2i_and_i2i() -> None:
    refused(
        "hidream_o1",
        "full",
        spec_datasets=[{"name": "a"}, {"name": "b"}],
        datasets=[image_dataset("a"), image_dataset("b", control=True, control_count=1)],
    )


def test_hidream_swap_with_i2i_needs_batch_one() -> None:
    refused(
        "hidream_o1",
        "full",
        {"training": {"effective_batch": 2}, **config(blocks_to_swap=4, batch_size=2)},
        spec_datasets=[{"name": "a"}],
        datasets=[image_dataset("a", control=True, control_count=1)],
    )


def test_network_module_of_another_architecture() -> None:
    refused("zimage", None, {"training": {"network": {"module": "networks.lora_wan"}}})


def test_loha_not_on_kandinsky() -> None:
    # Musubi's detect_arch_config raises on Kandinsky 5's DiT (test_musubi_networks.py).
    err = refused(
        "kandinsky5",
        "k5-pro-t2v-5s-sd",
        {"training": {"network": {"module": "networks.loha"}}},
        spec_datasets=[{"name": "clips", "frames": [1]}],
        datasets=[video_dataset()],
        error=Unsupported,
    )
    assert "Cannot auto-detect architecture" in str(err)


def test_lokr_not_on_ideogram4() -> None:
    err = refused(
        "ideogram4",
        None,
        {"training": {"network": {"module": "networks.lokr"}}},
        error=Unsupported,
    )
    assert "Cannot auto-detect architecture" in str(err)


def test_unknown_model_role() -> None:
    refused("zimage", None, roles={"dit": "/m", "vae": "/v", "text_encoder": "/t", "unet": "/u"})


def test_unresolved_dataset() -> None:
    refused("zimage", None, spec_datasets=[{"name": "missing"}])


def test_unknown_architecture_without_escape_hatch() -> None:
    run = make_spec()
    inputs = replace(make_inputs("zimage", None), architecture="hunyuan_image_3")
    with pytest.raises(Unsupported) as caught:
        compile_run(run, inputs)
    assert "no built-in Musubi adapter" in caught.value.message
    assert "nothing about whether Musubi supports it" in caught.value.message


def test_full_extraction_ignores_frames() -> None:
    refused(
        "framepack",
        None,
        spec_datasets=[{"name": "clips", "frames": [25], "max_frames": 97}],
        datasets=[video_dataset()],
    )


def test_full_extraction_needs_max_frames() -> None:
    err = refused("framepack", None, spec_datasets=[{"name": "clips"}], datasets=[video_dataset()])
    assert "max_frames" in err.message
