"""Behaviour of the compiler beyond the goldens: escape hatch, caches, warnings, shape."""

from __future__ import annotations

import tomllib
from dataclasses import replace

from musubi_cases import RUN_DIR, image_dataset, make_inputs, make_spec, video_dataset

from kura.backends.documents import compiled_document
from kura.backends.musubi import DEFAULT_IMAGE, MUSUBI_RELEASE, compile_run


def test_to_dict_shape() -> None:
    result = compiled_document(compile_run(make_spec(), make_inputs("zimage", None)))
    assert set(result) == {
        "backend",
        "release",
        "files",
        "steps",
        "container",
        "warnings",
        "escape_hatch",
    }
    assert result["release"] == MUSUBI_RELEASE
    assert result["backend"] == "musubi-tuner"
    assert [s["name"] for s in result["steps"]] == [
        "cache_latents",
        "cache_text_encoder",
        "train",
    ]
    for step in result["steps"]:
        assert set(step) == {"name", "kind", "argv", "env", "cwd", "generated"}
        assert all(isinstance(a, str) for a in step["argv"])
        assert step["env"] == {"HF_HUB_OFFLINE": "1"}
    container = result["container"]
    assert container["image"] == DEFAULT_IMAGE == "kura/musubi-tuner:0.3.4"
    assert container["env"]["HF_HUB_OFFLINE"] == "1"
    modes = {m["target"]: m["read_only"] for m in container["mounts"]}
    assert modes["/data/photos"] is True
    assert modes["/models/zimage/dit.safetensors"] is True
    for sub in ("cache", "output", "logs"):
        assert modes[f"{RUN_DIR}/{sub}"] is False


def test_train_argv_always_carries_the_explicit_flags() -> None:
    result = compile_run(make_spec(), make_inputs("zimage", None))
    argv = result.steps[-1].argv
    for flag in (
        "--sdpa",
        "--optimizer_type",
        "--network_alpha",
        "--network_dim",
        "--save_precision",
        "--save_state",
        "--logging_dir",
        "--output_dir",
        "--output_name",
        "--save_every_n_epochs",
        "--mixed_precision",
    ):
        assert flag in argv, flag
    launch = argv[: argv.index("src/musubi_tuner/zimage_train_network.py")]
    for flag in (
        "--num_processes",
        "--num_machines",
        "--mixed_precision",
        "--dynamo_backend",
        "--num_cpu_threads_per_process",
    ):
        assert flag in launch
    assert "--multi_gpu" not in launch


def test_cache_folder_per_model_version_for_shared_suffixes() -> None:
    def cache_dir(version: str) -> str:
        inputs = make_inputs(
            "qwen_image",
            version,
            [image_dataset("pairs", control=True, control_count=1)],
        )
        result = compile_run(make_spec(datasets=[{"name": "pairs"}]), inputs)
        return tomllib.loads(result.files["dataset.toml"])["datasets"][0]["cache_directory"]

    assert cache_dir("edit") != cache_dir("edit-2509") != cache_dir("edit-2511")


def test_cache_folders_are_unique_per_dataset() -> None:
    spec = make_spec(datasets=[{"name": "a"}, {"name": "a b"}, {"name": "a/b"}])
    inputs = make_inputs(
        "zimage", None, [image_dataset("a"), image_dataset("a b"), image_dataset("a/b")]
    )
    parsed = tomllib.loads(compile_run(spec, inputs).files["dataset.toml"])
    dirs = [d["cache_directory"] for d in parsed["datasets"]]
    assert len(set(dirs)) == 3
    assert all(d.startswith(f"{RUN_DIR}/cache/zimage/") for d in dirs)


def test_video_source_fps_is_a_float() -> None:
    spec = make_spec(datasets=[{"name": "clips", "frames": [1, 25]}])
    inputs = make_inputs("hunyuan_video", None, [video_dataset(fps=30)])
    text = compile_run(spec, inputs).files["dataset.toml"]
    entry = tomllib.loads(text)["datasets"][0]
    assert entry["source_fps"] == 30.0
    assert isinstance(entry["source_fps"], float)
    assert entry["target_frames"] == [1, 25]


def test_video_datasets_are_bucketed_for_training() -> None:
    # Musubi's VideoDataset.prepare_for_training puts every aspect in one bucket without it.
    spec = make_spec(datasets=[{"name": "clips", "frames": [1, 25]}])
    inputs = make_inputs("hunyuan_video", None, [video_dataset(fps=24)])
    entry = tomllib.loads(compile_run(spec, inputs).files["dataset.toml"])["datasets"][0]
    assert entry["enable_bucket"] is True


def test_image_datasets_are_bucketed() -> None:
    text = compile_run(make_spec(), make_inputs("zimage", None)).files["dataset.toml"]
    parsed = tomllib.loads(text)
    assert parsed["general"] == {"batch_size": 1}
    assert parsed["datasets"][0]["enable_bucket"] is True


def test_micro_batch_goes_to_the_dataset_toml() -> None:
    spec = make_spec(
        {
            "training": {"effective_batch": 4},
            "backend": {"config": {"batch_size": 2, "gradient_accumulation_steps": 2}},
        }
    )
    result = compile_run(spec, make_inputs("zimage", None))
    assert tomllib.loads(result.files["dataset.toml"])["general"]["batch_size"] == 2
    argv = result.steps[-1].argv
    assert argv[argv.index("--gradient_accumulation_steps") + 1] == "2"


def test_steps_mode_when_epochs_unset() -> None:
    spec = make_spec({"training": {"epochs": None, "max_steps": 500}})
    argv = compile_run(spec, make_inputs("zimage", None)).steps[-1].argv
    assert argv[argv.index("--max_train_steps") + 1] == "500"
    assert "--max_train_epochs" not in argv


def test_escape_hatch_replaces_the_train_argv() -> None:
    command = [
        "accelerate",
        "launch",
        "x.py",
        "--dataset_config",
        "{dataset_config}",
        "--dit",
        "{model.dit}",
    ]
    spec = make_spec(
        {"backend": {"config": {"command": command}, "reasons": {"command": "new flag"}}}
    )
    result = compile_run(spec, make_inputs("zimage", None))
    assert result.escape_hatch
    train = result.steps[-1]
    assert not train.generated
    assert list(train.argv) == [
        "accelerate",
        "launch",
        "x.py",
        "--dataset_config",
        f"{RUN_DIR}/compiled/dataset.toml",
        "--dit",
        "/models/zimage/dit.safetensors",
    ]
    assert result.steps[0].generated
    assert any("escape hatch" in w for w in result.warnings)


def test_escape_hatch_for_an_architecture_without_adapter() -> None:
    spec = make_spec(
        {
            "backend": {
                "config": {
                    "cache_latents_command": ["python", "src/musubi_tuner/new_cache_latents.py"],
                    "command": ["accelerate", "launch", "src/musubi_tuner/new_train_network.py"],
                }
            }
        }
    )
    inputs = replace(make_inputs("zimage", None), architecture="brand_new")
    result = compile_run(spec, inputs)
    assert result.escape_hatch
    assert [s.name for s in result.steps] == ["cache_latents", "train"]
    assert all(not s.generated for s in result.steps)
    parsed = tomllib.loads(result.files["dataset.toml"])
    assert parsed["datasets"][0]["cache_directory"].startswith(f"{RUN_DIR}/cache/brand_new/")


def test_escape_hatch_command_must_be_a_list() -> None:
    import pytest

    from kura.errors import SpecError

    spec = make_spec({"backend": {"config": {"command": "accelerate launch x.py"}}})
    with pytest.raises(SpecError):
        compile_run(spec, make_inputs("zimage", None))


def test_unknown_swap_limit_is_a_warning_not_a_silence() -> None:
    spec = make_spec(
        {"backend": {"config": {"blocks_to_swap": 8, "fp8_base": True, "fp8_scaled": True}}}
    )
    result = compile_run(spec, make_inputs("hidream_o1", "full"))
    assert any("cannot check blocks_to_swap" in w for w in result.warnings)


def test_config_without_reason_is_called_out() -> None:
    spec = make_spec({"backend": {"config": {"blocks_to_swap": 8}}})
    result = compile_run(spec, make_inputs("zimage", None))
    assert any("without a reason" in w for w in result.warnings)


def test_wan_dual_dit_uses_an_integer_boundary() -> None:
    spec = make_spec(datasets=[{"name": "clips", "frames": [1]}])
    inputs = make_inputs("wan", "i2v-A14B", [video_dataset()], drop_roles=("image_encoder",))
    result = compile_run(spec, inputs)
    argv = result.steps[-1].argv
    assert argv[argv.index("--timestep_boundary") + 1] == "900"
    assert "--dit_high_noise" in argv
    assert "--i2v" in result.steps[0].argv


def test_wan_single_expert_has_no_boundary() -> None:
    spec = make_spec(datasets=[{"name": "clips", "frames": [1]}])
    inputs = make_inputs(
        "wan", "t2v-A14B", [video_dataset()], drop_roles=("image_encoder", "dit_high_noise")
    )
    argv = compile_run(spec, inputs).steps[-1].argv
    assert "--timestep_boundary" not in argv
    assert "--dit_high_noise" not in argv


def test_container_image_can_be_overridden() -> None:
    inputs = replace(make_inputs("zimage", None), container_image="registry.local/musubi:pinned")
    assert compile_run(make_spec(), inputs).container.image == "registry.local/musubi:pinned"
