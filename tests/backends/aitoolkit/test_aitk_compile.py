"""The AI-Toolkit job compiler: goldens, and each semantic Kura must carry."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from aitk_cases import RUN_DIR, RUN_ID, image_dataset, make_inputs, make_spec, video_dataset

from kura.backends.aitoolkit.compile import JOB_FILE, compile_run, job_for
from kura.backends.aitoolkit.fit import NOT_SIZEABLE, next_rung
from kura.backends.aitoolkit.schema import JobFile
from kura.backends.base import DatasetInput
from kura.errors import SpecError, Unsupported

GOLDEN = Path(__file__).with_name("golden")

CASES = {
    "qwen-image": (make_spec(), make_inputs()),
    "qwen-image-edit-pairs": (
        make_spec(
            base="aitk-qwen-image-edit",
            training={"sample_prompts": ["make it night --ctrl_img /data/pairs.control/a.png"]},
        ),
        make_inputs("aitk-qwen-image-edit", [image_dataset("pairs", control=True)]),
    ),
    "wan22-a14b-video-ara": (
        make_spec(
            base="aitk-wan2.2-t2v-a14b",
            datasets=[{"name": "clips", "resolution": [512], "frames": [33]}],
            training={
                "effective_batch": 1,
                "max_steps": 600,
                "epochs": None,
                "sample_prompts": [],
                "sample_every_n_epochs": None,
            },
            config={
                "cache_text_embeddings": True,
                "quantize": True,
                "qtype": "uint4",
                "accuracy_recovery_adapter": True,
                "low_vram": True,
                "gradient_checkpointing": True,
                "save_every_steps": 200,
            },
        ),
        make_inputs("aitk-wan2.2-t2v-a14b", [video_dataset("clips")]),
    ),
    "sdxl-alpha": (
        make_spec(
            base="sdxl-base-1.0",
            training={"network": {"rank": 32, "alpha": 16.0}},
            config={},  # SDXL samples only with its text encoders loaded
        ),
        make_inputs("sdxl-base-1.0"),
    ),
    "chroma": (make_spec(base="chroma1-base"), make_inputs("chroma1-base")),
    "sdxl-diffusers-cpu": (
        make_spec(
            base="aitk-sdxl-base-1.0",
            datasets=[{"name": "photos", "resolution": [64], "repeats": 1}],
            training={
                "network": {"rank": 4, "alpha": 4.0},
                "optimizer": "adamw",
                "max_steps": 4,
                "epochs": None,
                "sample_prompts": [],
                "sample_every_n_epochs": None,
                "effective_batch": 1,
            },
            config={"dtype": "fp32", "offline": True},
        ),
        make_inputs("aitk-sdxl-base-1.0"),
    ),
    "flux2-klein-offload": (
        make_spec(
            base="aitk-flux2-klein-base-9b",
            training={
                "effective_batch": 4,
                "warmup_steps": 50,
                "optimizer_args": ["weight_decay=0.01"],
            },
            config={
                "batch_size": 2,
                "cache_text_embeddings": True,
                "quantize": True,
                "quantize_te": True,
                "gradient_checkpointing": True,
                "layer_offloading_transformer_percent": 0.5,
            },
        ),
        make_inputs("aitk-flux2-klein-base-9b"),
    ),
    "qwen-image-unload-trigger": (
        make_spec(
            training={"optimizer_args": ["betas=0.9,0.99", "weight_decay=0.01", "eps=1e-8"]},
            config={"unload_text_encoder": True},
        ),
        make_inputs(datasets=[image_dataset(trigger="myaku")]),
    ),
    "qwen-image-te-offload": (
        make_spec(config={"layer_offloading_text_encoder_percent": 0.5}),
        make_inputs(),
    ),
    "wan21-i2v-start-image": (
        make_spec(
            base="aitk-wan2.1-i2v-14b",
            datasets=[{"name": "clips", "resolution": [480], "frames": [33]}],
            training={"sample_prompts": ["she turns --ctrl_img /data/start.png"]},
            config={"cache_text_embeddings": True},
        ),
        make_inputs("aitk-wan2.1-i2v-14b", [video_dataset("clips")]),
    ),
    "zimage-lokr": (
        make_spec(
            base="aitk-zimage-base", config={"network_type": "lokr", "cache_text_embeddings": True}
        ),
        make_inputs("aitk-zimage-base"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_job_files(case: str, update_golden: bool) -> None:
    spec, inputs = CASES[case]
    text = compile_run(spec, inputs).files[JOB_FILE]
    path = GOLDEN / f"{case}.yaml"
    if update_golden:
        path.write_text(text)
    assert text == path.read_text(), f"golden {path.name} differs (rerun with --update-golden)"
    assert compile_run(spec, inputs).files[JOB_FILE] == text  # deterministic bytes


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_files_parse_back_into_the_strict_schema(case: str) -> None:
    text = (GOLDEN / f"{case}.yaml").read_text()
    assert "#" not in text and "${" not in text and "[name]" not in text
    document = yaml.safe_load(text)
    JobFile.model_validate(document)
    process = document["config"]["process"][0]
    assert "device" not in process and "device" not in document["config"]
    assert None not in _values(document)


def _values(node: object) -> list[object]:
    if isinstance(node, dict):
        return [v for item in node.values() for v in _values(item)] + list(node.values())
    if isinstance(node, list):
        return [v for item in node for v in _values(item)] + list(node)
    return []


def test_schema_forbids_unknown_keys_and_loose_types() -> None:
    job, _ = job_for(make_spec(), make_inputs())
    document = job.model_dump(mode="json", exclude_none=True)
    document["config"]["process"][0]["device"] = "cuda:0"
    with pytest.raises(ValueError, match="device"):
        JobFile.model_validate(document)
    document["config"]["process"][0].pop("device")
    document["config"]["process"][0]["train"]["gradient_checkpointing"] = "false"
    with pytest.raises(ValueError, match="gradient_checkpointing"):
        JobFile.model_validate(document)


def test_peft_models_ignore_alpha_and_say_so() -> None:
    spec = make_spec(training={"network": {"rank": 32, "alpha": 1.0}})
    job, warnings = job_for(spec, make_inputs())
    network = job.config.process[0].network
    assert network.linear == 32 and network.linear_alpha is None
    assert any("ignores linear_alpha" in w and "effective scale is 1.0" in w for w in warnings)
    # a legacy UNet honours the alpha, and it is written
    job, warnings = job_for(
        make_spec(
            base="sdxl-base-1.0", training={"network": {"rank": 32, "alpha": 1.0}}, config={}
        ),
        make_inputs("sdxl-base-1.0"),
    )
    assert job.config.process[0].network.linear_alpha == 1.0
    assert not any("linear_alpha" in w for w in warnings)


def test_the_plan_shows_the_effective_scale(tmp_path: Path) -> None:
    from kura.backends.aitoolkit.archs import model_for
    from kura.backends.aitoolkit.fit import network_document

    spec = make_spec(training={"network": {"rank": 32, "alpha": 8.0}})
    qwen = network_document(spec, model_for("aitk-qwen-image"))  # type: ignore[arg-type]
    sdxl = network_document(spec, model_for("sdxl-base-1.0"))  # type: ignore[arg-type]
    assert qwen["effective_scale"] == 1.0 and "alpha = rank" in str(qwen["note"])
    assert sdxl["effective_scale"] == 0.25


@pytest.mark.parametrize("network", ["loha", "lierla", "LoRA"])
def test_unknown_network_types_are_refused(network: str) -> None:
    with pytest.raises(SpecError, match="network_type"):
        job_for(make_spec(config={"network_type": network}), make_inputs())


def test_musubi_network_fields_are_refused() -> None:
    with pytest.raises(Unsupported, match=r"network\.args"):
        job_for(
            make_spec(training={"network": {"rank": 16, "alpha": 16, "args": ["x=1"]}}),
            make_inputs(),
        )
    with pytest.raises(Unsupported, match=r"network\.module"):
        job_for(
            make_spec(
                training={
                    "network": {"rank": 16, "alpha": 16, "module": "networks.lora_qwen_image"}
                }
            ),
            make_inputs(),
        )


def test_cache_and_unload_text_encoder_exclude_each_other() -> None:
    with pytest.raises(SpecError, match="exclude each other"):
        job_for(
            make_spec(config={"cache_text_embeddings": True, "unload_text_encoder": True}),
            make_inputs(),
        )


def test_unload_text_encoder_is_never_written_without_saying_captions_are_ignored() -> None:
    job, warnings = job_for(make_spec(config={"unload_text_encoder": True}), make_inputs())
    assert job.config.process[0].train.unload_text_encoder is True
    assert any("EVERY CAPTION IS IGNORED" in w for w in warnings)
    with pytest.raises(Unsupported, match="refuses unload_text_encoder"):
        job_for(
            make_spec(base="aitk-qwen-image-edit", config={"unload_text_encoder": True}),
            make_inputs("aitk-qwen-image-edit", [image_dataset(control=True)]),
        )


def test_micro_batch_times_accumulation_is_the_effective_batch() -> None:
    job, _ = job_for(
        make_spec(training={"effective_batch": 6}, config={"batch_size": 3}), make_inputs()
    )
    train = job.config.process[0].train
    assert (train.batch_size, train.gradient_accumulation) == (3, 2)
    with pytest.raises(SpecError, match="not a multiple"):
        job_for(make_spec(training={"effective_batch": 6}, config={"batch_size": 4}), make_inputs())


def test_steps_not_epochs() -> None:
    # 10 items × 2 repeats / effective batch 2 = 10 steps per epoch; 4 epochs
    job, _ = job_for(make_spec(), make_inputs())
    process = job.config.process[0]
    assert process.train.steps == 40
    assert process.save.save_every == 10
    assert process.sample is not None and process.sample.sample_every == 20
    job, _ = job_for(make_spec(training={"max_steps": 123, "epochs": None}), make_inputs())
    assert job.config.process[0].train.steps == 123
    unknown = image_dataset()
    with pytest.raises(SpecError, match="item"):
        job_for(
            make_spec(),
            make_inputs(datasets=[type(unknown)(**{**unknown.__dict__, "items": None})]),
        )


def test_each_run_has_its_own_name_and_folders_and_caches_stay_out_of_the_dataset() -> None:
    compiled = compile_run(make_spec(), make_inputs())
    job = yaml.safe_load(compiled.files[JOB_FILE])
    process = job["config"]["process"][0]
    assert job["config"]["name"] == RUN_ID
    assert process["training_folder"] == RUN_DIR and process["name"] == "output"
    assert process["datasets"][0]["folder_path"] == f"{RUN_DIR}/data/photos"
    assert not process["datasets"][0]["folder_path"].startswith("/data/")
    prepare = compiled.steps[0]
    assert prepare.kind == "prepare" and prepare.argv[-2:] == (
        "/data/photos",
        f"{RUN_DIR}/data/photos",
    )
    assert any("resumes by itself" in w for w in compiled.warnings)


def test_the_link_script_links_file_by_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    from kura.backends.aitoolkit.compile import LINKS_FILE

    source = tmp_path / "photos"
    (source / "sub").mkdir(parents=True)
    (source / "a.png").write_bytes(b"png")
    (source / "a.txt").write_text("myaku")
    (source / "sub" / "b.png").write_bytes(b"png")
    (source / "_latent_cache").mkdir()
    script = tmp_path / LINKS_FILE
    script.write_text(compile_run(make_spec(), make_inputs()).files[LINKS_FILE])
    target = tmp_path / "run" / "data" / "photos"
    for _ in range(2):  # idempotent
        subprocess.run([sys.executable, str(script), str(source), str(target)], check=True)
    assert (target / "a.png").is_symlink() and (target / "sub" / "b.png").is_symlink()
    assert not (target / "_latent_cache").exists()
    (target / "_latent_cache").mkdir()  # where AI-Toolkit writes: the run, not the dataset
    assert not (source / "_latent_cache" / "x").exists()


def test_layer_offloading_only_where_the_class_reads_it() -> None:
    with pytest.raises(Unsupported, match="ignores layer_offloading"):
        job_for(
            make_spec(base="chroma1-base", config={"layer_offloading_transformer_percent": 0.5}),
            make_inputs("chroma1-base"),
        )


def test_accuracy_recovery_adapter_only_from_the_known_files() -> None:
    job, _ = job_for(
        make_spec(config={"quantize": True, "qtype": "uint3", "accuracy_recovery_adapter": True}),
        make_inputs(),
    )
    assert job.config.process[0].model.qtype == (
        "uint3|ostris/accuracy_recovery_adapters/qwen_image_torchao_uint3.safetensors"
    )
    with pytest.raises(Unsupported, match="no accuracy-recovery adapter"):
        job_for(
            make_spec(
                config={"quantize": True, "qtype": "uint4", "accuracy_recovery_adapter": True}
            ),
            make_inputs(),
        )
    with pytest.raises(SpecError, match="qtype"):
        job_for(make_spec(config={"quantize": True, "qtype": "qfloat9"}), make_inputs())


def test_a_musubi_bundle_is_refused_naming_the_ai_toolkit_bundles() -> None:
    with pytest.raises(SpecError, match="laid out for another trainer") as caught:
        job_for(make_spec(base="qwen-image"), make_inputs("qwen-image", architecture="qwen_image"))
    assert "aitk-qwen-image" in (caught.value.hint or "")


def test_prompts_with_substitution_tokens_are_refused() -> None:
    with pytest.raises(SpecError, match=r"\$\{"):
        compile_run(make_spec(training={"sample_prompts": ["a ${HOME} photo"]}), make_inputs())
    with pytest.raises(SpecError, match=r"\[name\]"):
        compile_run(make_spec(training={"sample_prompts": ["[name] portrait"]}), make_inputs())


def test_the_ladder_of_aids_and_the_remedy_after_oom() -> None:
    from kura.backends.aitoolkit.aids import aids_for
    from kura.backends.aitoolkit.archs import model_for

    aids = aids_for(model_for("aitk-wan2.2-t2v-a14b"), 2)  # type: ignore[arg-type]
    assert [a.name for a in aids] == [
        "micro-batch",
        "cache-text-embeddings",
        "gradient-checkpointing",
        "quantize",
        "quantize-text-encoder",
        "4bit-accuracy-recovery",
        "layer-offloading",
        "low-vram",
    ]
    assert all(a.costs and a.saves for a in aids)
    chroma = [a.name for a in aids_for(model_for("chroma1-base"), 1)]  # type: ignore[arg-type]
    assert "layer-offloading" not in chroma and "4bit-accuracy-recovery" not in chroma
    facts = {"aitk_ara_qtypes": ["uint4"], "aitk_layer_offloading": True, "effective_batch": 1}
    config: dict[str, object] = dict(facts)
    seen = []
    while True:
        rung = next_rung(config, step="train", phase="training")
        if rung["action"] != "set":
            break
        seen.append(rung["aid"])
        config.update(rung["change"])  # type: ignore[arg-type]
    assert seen == [
        "gradient-checkpointing",
        "quantize",
        "quantize-text-encoder",
        "low-vram",
        "4bit-accuracy-recovery",
        "layer-offloading",
        "layer-offloading",
        "layer-offloading",
        "layer-offloading",
    ]
    assert rung["key"] == "gpu"


def test_not_sizeable_steps_never_fit() -> None:
    from kura.backends.aitoolkit.archs import model_for
    from kura.backends.aitoolkit.fit import AitkProblem
    from kura.backends.base import PlanInputs
    from kura.models.bundles import get_bundle
    from kura.planning.gpus import get_gpu_class
    from kura.planning.ladder import walk

    # Every shipped bundle has a shape: a model class without one stays unsized.
    inputs = PlanInputs(bundle=get_bundle("chroma1-base"), datasets={})
    model = model_for("chroma1-base")
    assert model is not None
    unshaped = dataclasses.replace(model, bundle="aitk-model-without-a-shape")
    spec = make_spec(base="chroma1-base")
    problem = AitkProblem(spec, unshaped, get_gpu_class("h100-pcie"), inputs)
    evaluation = problem.evaluate(problem.baseline())
    train = next(c for c in evaluation.costs if c.kind == "train")
    assert train.fits is None and train.peak_gib is None and NOT_SIZEABLE in train.notes
    assert evaluation.fits is False
    assert walk(problem).fits is False


# Issue 22 item 4: runs that train as planned (each rule read in AI-Toolkit 27a03a9's code).


@pytest.mark.parametrize(
    ("bundle", "dataset"),
    [
        ("aitk-flux1-kontext-dev", image_dataset("photos", control=True)),  # flux_kontext.py:213
        ("aitk-qwen-image-edit-2509", image_dataset("photos", control=True)),  # …_plus.py:179
        ("aitk-qwen-image-edit", image_dataset("photos", control=True)),  # pipeline …edit:676
        ("aitk-wan2.1-i2v-14b", video_dataset("photos")),  # wan21_i2v.py:415
    ],
)
def test_a_sampler_that_needs_a_control_image_gets_one_or_the_run_is_refused(
    bundle: str, dataset: DatasetInput
) -> None:
    frames = {"frames": [33]} if dataset.kind == "video" else {}
    use = [{"name": "photos", "resolution": [512], **frames}]
    with pytest.raises(SpecError, match="stops at the first sample"):
        job_for(make_spec(base=bundle, datasets=use), make_inputs(bundle, [dataset]))
    spec = make_spec(
        base=bundle,
        datasets=use,
        training={"sample_prompts": ["make it night --ctrl_img /data/photos.control/a.png"]},
    )
    job, _ = job_for(spec, make_inputs(bundle, [dataset]))
    sample = job.config.process[0].sample
    assert sample is not None
    assert [(s.prompt, s.ctrl_img) for s in sample.samples] == [
        ("make it night", "/data/photos.control/a.png")
    ]


def test_a_control_image_is_refused_where_the_sampler_never_reads_it() -> None:
    # qwen_image.py:263-266 raises NotImplementedError on a ctrl_img
    with pytest.raises(Unsupported, match="does not read a control image"):
        job_for(
            make_spec(training={"sample_prompts": ["myaku --ctrl_img /data/a.png"]}),
            make_inputs(),
        )
    with pytest.raises(SpecError, match="not an absolute path"):
        job_for(
            make_spec(
                base="aitk-flux2-dev",
                training={"sample_prompts": ["myaku --ctrl_img a.png"]},
            ),
            make_inputs("aitk-flux2-dev"),
        )


def test_in_a_container_the_control_image_is_a_read_only_mount_named_by_its_container_path() -> (
    None
):
    spec = make_spec(
        base="aitk-flux2-dev",
        training={"sample_prompts": ["myaku --w 512 --ctrl_img /home/me/my pics/start.png"]},
        execution={"executor": "docker"},
    )
    compiled = compile_run(spec, make_inputs("aitk-flux2-dev"))
    sample = yaml.safe_load(compiled.files[JOB_FILE])["config"]["process"][0]["sample"]
    assert sample["samples"] == [
        {"prompt": "myaku --w 512", "ctrl_img": "/kura/sample-inputs/00-start.png"}
    ]
    assert compiled.container is not None
    mount = next(m for m in compiled.container.mounts if m.source == "/home/me/my pics/start.png")
    assert (mount.target, mount.read_only) == ("/kura/sample-inputs/00-start.png", True)


@pytest.mark.parametrize("bundle", ["aitk-qwen-image", "aitk-wan2.1-t2v-14b", "chroma1-base"])
def test_locon_is_refused_on_a_transformer_where_it_would_build_no_module(bundle: str) -> None:
    # lycoris_special.py:117-122 wraps UNet block class names only, matched at :236-237
    with pytest.raises(Unsupported, match="locon trains nothing") as caught:
        job_for(make_spec(base=bundle, config={"network_type": "locon"}), make_inputs(bundle))
    assert "network_type to lora" in (caught.value.hint or "")
    job, _ = job_for(
        make_spec(base="sdxl-base-1.0", config={"network_type": "locon"}),
        make_inputs("sdxl-base-1.0"),
    )
    assert job.config.process[0].network.type == "locon"


def test_optimizer_args_are_written_as_the_constructor_types() -> None:
    spec = make_spec(
        training={"optimizer_args": ["betas=(0.9, 0.99)", "decouple=True", "eps=1e-8", "k=3"]}
    )
    job, _ = job_for(spec, make_inputs())
    assert job.config.process[0].train.optimizer_params == {
        "betas": [0.9, 0.99],
        "decouple": True,
        "eps": 1e-8,
        "k": 3,
    }
    text = compile_run(spec, make_inputs()).files[JOB_FILE]
    assert "betas:\n        - 0.9\n        - 0.99\n" in text
    with pytest.raises(SpecError, match="not a Python literal"):
        job_for(make_spec(training={"optimizer_args": ["betas=[0.9"]}), make_inputs())


def test_unload_text_encoder_writes_the_trigger_word_it_trains_on() -> None:
    # SDTrainer.py:359 encodes trigger_word; :1680-1684 trains every step on it
    spec = make_spec(config={"unload_text_encoder": True})
    job, warnings = job_for(spec, make_inputs(datasets=[image_dataset(trigger="myaku")]))
    assert job.config.process[0].trigger_word == "myaku"
    assert any("on the trigger word 'myaku' alone" in w for w in warnings)
    job, warnings = job_for(spec, make_inputs())
    assert job.config.process[0].trigger_word is None
    assert any("on the blank prompt" in w and "EVERY CAPTION" in w for w in warnings)
    two = [{"name": "a", "resolution": [1024]}, {"name": "b", "resolution": [1024]}]
    with pytest.raises(Unsupported, match="one prompt"):
        job_for(
            make_spec(datasets=two, config={"unload_text_encoder": True}),
            make_inputs(
                datasets=[image_dataset("a", trigger="myaku"), image_dataset("b", trigger="zed")]
            ),
        )
    job, _ = job_for(make_spec(), make_inputs(datasets=[image_dataset(trigger="myaku")]))
    assert job.config.process[0].trigger_word is None  # captions keep their own words


@pytest.mark.parametrize(
    ("bundle", "cfg", "steps"),
    [
        ("aitk-qwen-image", 3.0, 25),  # config/examples/train_lora_qwen_image_24gb.yaml:91-92
        ("chroma1-base", 4.0, 25),  # train_lora_chroma_24gb.yaml:100-101
        ("sdxl-base-1.0", 6.0, 30),  # ui options.tsx:592, defaultSamples.ts:48
    ],
)
def test_sample_settings_are_the_architectures_not_sampleconfigs_defaults(
    bundle: str, cfg: float, steps: int
) -> None:
    job, _ = job_for(make_spec(base=bundle, config={}), make_inputs(bundle))
    sample = job.config.process[0].sample
    assert sample is not None
    assert (sample.guidance_scale, sample.sample_steps, sample.neg) == (cfg, steps, "")


def test_text_encoder_offloading_alone_compiles_with_the_transformer_kept() -> None:
    job, _ = job_for(
        make_spec(config={"layer_offloading_text_encoder_percent": 0.5}), make_inputs()
    )
    model = job.config.process[0].model
    assert model.layer_offloading is True
    assert (
        model.layer_offloading_transformer_percent,
        model.layer_offloading_text_encoder_percent,
    ) == (
        0.0,
        0.5,
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("frame_extraction", "slide"),
        ("frame_stride", 4),
        ("frame_sample", 3),
        ("max_frames", 81),
    ],
)
def test_musubis_clip_cutting_is_refused_saying_how_aitk_takes_a_clip(
    key: str, value: object
) -> None:
    spec = make_spec(
        base="aitk-wan2.1-t2v-14b",
        datasets=[{"name": "clips", "resolution": [480], "frames": [33], key: value}],
    )
    with pytest.raises(Unsupported, match=f"{key} .* spread evenly over the whole video"):
        job_for(spec, make_inputs("aitk-wan2.1-t2v-14b", [video_dataset("clips")]))


def test_a_video_run_says_how_aitk_makes_each_clip() -> None:
    spec = make_spec(
        base="aitk-wan2.1-t2v-14b",
        datasets=[{"name": "clips", "resolution": [480], "frames": [33]}],
    )
    _, warnings = job_for(spec, make_inputs("aitk-wan2.1-t2v-14b", [video_dataset("clips")]))
    assert any("one clip of 33 frames" in w and "shrink_video_to_frames" in w for w in warnings)


@pytest.mark.parametrize(
    ("key", "value"), [("control_resolution", [512]), ("no_resize_control", True)]
)
def test_control_sizing_keys_are_refused_aitk_sizes_controls_to_the_target(
    key: str, value: object
) -> None:
    spec = make_spec(
        base="aitk-qwen-image-edit",
        datasets=[{"name": "photos", "resolution": [1024], key: value}],
        training={"sample_prompts": []},
    )
    with pytest.raises(Unsupported, match="target image's bucket"):
        job_for(spec, make_inputs("aitk-qwen-image-edit", [image_dataset(control=True)]))


def test_another_trainers_bundle_names_the_same_models_aitk_bundle() -> None:
    with pytest.raises(SpecError, match="laid out for another trainer") as caught:
        job_for(
            make_spec(base="wan2.1-t2v-14b"),
            make_inputs("wan2.1-t2v-14b", architecture="wan"),
        )
    assert caught.value.hint == (
        "set model.base to aitk-wan2.1-t2v-14b (the AI-Toolkit bundle of the same model)"
    )


def test_sdxl_never_samples_after_caching_unloaded_its_text_encoders() -> None:
    # Seen in a real tiny SDXL run: toolkit/unloader.py:54-60 swaps text_encoder_2 for a
    # FakeTextEncoder and pipeline_stable_diffusion_xl.py:1128 reads its .config
    with pytest.raises(Unsupported, match="cannot sample once cache_text_embeddings") as caught:
        job_for(make_spec(base="sdxl-base-1.0"), make_inputs("sdxl-base-1.0"))
    assert "cache_text_embeddings: false" in (caught.value.hint or "")
    job, _ = job_for(
        make_spec(base="sdxl-base-1.0", training={"sample_prompts": []}),
        make_inputs("sdxl-base-1.0"),
    )
    assert job.config.process[0].train.cache_text_embeddings is True  # caching alone is fine
    job_for(make_spec(), make_inputs())  # a transformer class samples from cached embeddings


@pytest.mark.parametrize("key", ["quantize", "quantize_te"])
def test_sdxl_refuses_quantizing_which_its_class_never_does(key: str) -> None:
    # stable_diffusion_model.py:335-367: the SDXL class loads UNet and encoders unquantized
    with pytest.raises(Unsupported, match="never quantizes"):
        job_for(make_spec(base="sdxl-base-1.0", config={key: True}), make_inputs("sdxl-base-1.0"))


def test_sdxls_ladder_offers_no_quantizing() -> None:
    from kura.backends.aitoolkit.aids import aids_for
    from kura.backends.aitoolkit.archs import model_for

    sdxl, qwen = model_for("sdxl-base-1.0"), model_for("aitk-qwen-image")
    assert sdxl is not None and qwen is not None
    assert not [a.name for a in aids_for(sdxl, 1) if "quantize" in a.name or "4bit" in a.name]
    assert "quantize" in [a.name for a in aids_for(qwen, 1)]
