from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from kura.errors import NotFound, SpecError, UsageError
from kura.runs.new import create_run, recipe_keys
from kura.runs.store import load_run
from kura.workspace import Workspace

NOW = datetime(2026, 11, 30, 10, 42)


def test_recipe_keys_cover_the_training_schema() -> None:
    keys = recipe_keys()
    assert keys["training.network.rank"] == 16
    assert "training.learning_rate" in keys and "training.network" not in keys


def test_new_run_takes_card_values_and_says_where_from(ws: Workspace) -> None:
    created = create_run(ws, datasets=["myaku"], base="flux2-klein-base-9b", now=NOW)
    assert created.run_id == "20261130-1042"
    spec, _ = load_run(ws, created.run_id)
    assert spec.task == "character"
    assert spec.training.learning_rate == 1e-4
    assert spec.training.network.rank == 32
    assert spec.provenance["training.learning_rate"] == "card baseline (musubi-tuner flux2 × all)"
    assert spec.provenance["task"] == "dataset myaku: intent.task"
    assert spec.datasets[0].resolution == [1024, 1024]


def test_every_execution_setting_is_written_with_a_reason(ws: Workspace) -> None:
    created = create_run(ws, datasets=["myaku"], base="qwen-image", now=NOW)
    spec, _ = load_run(ws, created.run_id)
    assert spec.backend.config["gradient_checkpointing"] is False
    assert set(spec.backend.reasons) == set(spec.backend.config)


def test_set_overrides_any_path_and_is_recorded(ws: Workspace) -> None:
    created = create_run(
        ws,
        datasets=["myaku"],
        base="flux2-klein-base-9b",
        sets=["training.network.rank=8", "backend.config.blocks_to_swap=4", "execution.gpus=2"],
        now=NOW,
    )
    spec, _ = load_run(ws, created.run_id)
    assert spec.training.network.rank == 8
    assert spec.provenance["training.network.rank"] == "your instruction"
    assert spec.backend.config["blocks_to_swap"] == 4
    assert spec.execution.gpus == 2


def test_set_addresses_a_dataset_of_the_run_by_index(ws: Workspace) -> None:
    created = create_run(
        ws, datasets=["myaku"], base="flux2-klein-base-9b", sets=["datasets.0.repeats=3"], now=NOW
    )
    spec, _ = load_run(ws, created.run_id)
    assert spec.datasets[0].repeats == 3
    assert spec.provenance["datasets.0.repeats"] == "your instruction"


def test_bad_set_value_writes_no_run(ws: Workspace) -> None:
    with pytest.raises(SpecError, match=r"execution\.gpus"):
        create_run(ws, datasets=["myaku"], base="flux2-klein-base-9b", sets=["execution.gpus=0"])
    with pytest.raises(UsageError):
        create_run(ws, datasets=["myaku"], base="flux2-klein-base-9b", sets=["noequals"])
    assert list(ws.runs_dir.iterdir()) == []


def test_unknown_bundle_and_dataset_are_named(ws: Workspace) -> None:
    with pytest.raises(NotFound, match="flux9"):
        create_run(ws, datasets=["myaku"], base="flux9")
    with pytest.raises(NotFound, match="nope"):
        create_run(ws, datasets=["nope"], base="flux2-klein-base-9b")


def test_owner_preference_outranks_the_card(ws: Workspace) -> None:
    (ws.knowledge_dir / "user-preferences.md").write_text(
        "## all\n- training.learning_rate: 3.0e-5\n"
    )
    created = create_run(ws, datasets=["myaku"], base="flux2-klein-base-9b", now=NOW)
    spec, _ = load_run(ws, created.run_id)
    assert spec.training.learning_rate == 3e-5
    assert spec.provenance["training.learning_rate"] == "your preference"


def test_a_bundle_native_resolution_drafts_the_dataset_at_it_with_a_reason(ws: Workspace) -> None:
    # Kandinsky 5's -sd task is trained at 512 px (its RoPE scale is set for 512): a 1024²
    # dataset is drafted at 512², and the choice is visible with its reason.
    created = create_run(ws, datasets=["myaku"], base="kandinsky5-pro-t2v-5s", now=NOW)
    spec, _ = load_run(ws, created.run_id)
    assert spec.datasets[0].resolution == [512, 512]
    reason = spec.provenance["datasets.0.resolution"]
    assert "512×512" in reason and "1024×1024" in reason and "configs.py" in reason


@pytest.mark.parametrize("base", ["zimage-base", "flux1-kontext-dev", "qwen-image-edit"])
def test_a_dataset_at_the_native_resolution_keeps_its_own(ws: Workspace, base: str) -> None:
    created = create_run(ws, datasets=["myaku"], base=base, now=NOW)
    spec, _ = load_run(ws, created.run_id)
    assert spec.datasets[0].resolution == [1024, 1024]
    assert "datasets.0.resolution" not in spec.provenance


@pytest.mark.parametrize(
    ("base", "drafted", "source"),
    [
        # issue 11 item 14: every Musubi bundle carries its native size(s), with a source
        ("qwen-image", [1328, 1328], "config_manager.py"),
        # a square 1024² dataset on a 720p/480p model: 1280×720 is nearest in aspect and area
        ("wan2.1-t2v-14b", [1280, 720], "SUPPORTED_SIZES"),
        ("wan2.1-t2v-1.3b", [832, 480], "SUPPORTED_SIZES"),
        ("framepack", [640, 640], "framepack.md"),
        ("hidream-o1", [2048, 2048], "hidream_o1.md"),
    ],
)
def test_drafting_follows_each_bundles_native_resolution(
    ws: Workspace, base: str, drafted: list[int], source: str
) -> None:
    created = create_run(ws, datasets=["myaku"], base=base, now=NOW)
    spec, _ = load_run(ws, created.run_id)
    assert spec.datasets[0].resolution == drafted
    reason = spec.provenance["datasets.0.resolution"]
    assert f"{drafted[0]}×{drafted[1]}" in reason and "1024×1024" in reason
    assert source in reason and "set it back to train off-native" in reason


def test_every_musubi_bundle_but_layered_has_a_sourced_native_resolution() -> None:
    from kura.models.bundles import list_bundles

    missing = [
        b.id
        for b in list_bundles()
        if b.backend == "musubi-tuner" and not (b.native_resolutions and b.native_resolution_source)
    ]
    assert missing == ["qwen-image-layered"]


def test_a_character_run_gets_sample_prompts_from_its_captions(ws: Workspace) -> None:
    from kura.dataset.registry import read_dataset

    created = create_run(ws, datasets=["myaku"], base="flux2-klein-base-9b", now=NOW)
    spec, _ = load_run(ws, created.run_id)
    assert spec.task == "character"
    prompts = spec.training.sample_prompts
    assert 1 <= len(prompts) <= 3 and all("\n" not in p for p in prompts)
    dataset = read_dataset(ws, "myaku")
    trigger = dataset.intent.trigger or (
        dataset.facts.trigger.word if dataset.facts and dataset.facts.trigger else None
    )
    if trigger:
        assert all(trigger in p for p in prompts)
    # in Musubi's prompt syntax at the training size (its sampler's own default is 256 px)
    width, height = spec.datasets[0].resolution
    assert all(p.endswith(f" --w {width} --h {height}") for p in prompts)
    assert spec.training.sample_every_n_epochs == 4  # 16 epochs, 4 sampling points
    assert spec.provenance["training.sample_prompts"] == (
        "drafted from the captions of dataset myaku (turn off: --set training.sample_prompts=[])"
    )


def test_sample_prompts_can_be_turned_off(ws: Workspace) -> None:
    created = create_run(
        ws,
        datasets=["myaku"],
        base="flux2-klein-base-9b",
        sets=["training.sample_prompts=[]"],
        now=NOW,
    )
    spec, _ = load_run(ws, created.run_id)
    assert spec.training.sample_prompts == []
    assert spec.training.sample_every_n_epochs is None
    assert "training.sample_prompts" not in spec.provenance or (
        spec.provenance["training.sample_prompts"] == "your instruction"
    )


def test_only_a_character_run_gets_drafted_samples(ws: Workspace) -> None:
    created = create_run(ws, datasets=["myaku"], base="flux2-klein-base-9b", task="style", now=NOW)
    spec, _ = load_run(ws, created.run_id)
    assert spec.training.sample_prompts == []


# --- issue 23 items 9 and 2: drafted prompts are text only, and only what the trainer takes


def _captions(ws: Workspace, *texts: str) -> None:
    from kura.dataset.registry import media_dir, read_dataset

    folder = media_dir(ws, read_dataset(ws, "myaku"))
    for index, text in enumerate(texts):
        (folder / f"{index}.txt").write_text(text + "\n")


def test_option_syntax_in_a_caption_never_becomes_a_sample_prompt_option(ws: Workspace) -> None:
    from kura.backends.musubi.prompts import read_options

    _captions(ws, "myaku --s 5000 --f 999 --i /etc/passwd", "myaku, picture 1", "I am myaku")
    created = create_run(ws, datasets=["myaku"], base="flux2-klein-base-9b", now=NOW)
    spec, _ = load_run(ws, created.run_id)
    width, height = spec.datasets[0].resolution
    prompts = spec.training.sample_prompts
    assert prompts == [
        f"myaku -s 5000 -f 999 -i /etc/passwd --w {width} --h {height}",
        f"myaku, picture 1 --w {width} --h {height}",
    ]
    assert all(read_options(p) == {"width": str(width), "height": str(height)} for p in prompts)
    # the caption Musubi would read as `--i am myaku` is left out, saying so
    provenance = spec.provenance["training.sample_prompts"]
    assert "1 caption(s) left out" in provenance and "'I am myaku'" in provenance


def test_a_framepack_run_drafts_no_prompt_it_cannot_sample_and_says_why(
    ws: Workspace, tmp_path
) -> None:
    from kura.dataset.registry import add_dataset, set_dataset_values
    from tests.dataset.dataset_builders import Builder

    clips = Builder(tmp_path / "clips")
    for index in range(2):
        clips.video(f"c{index}.mp4", 60, fps=30, caption=f"myaku walking {index}")
    add_dataset(ws, "clips", tmp_path / "clips", resolution=(640, 640))
    set_dataset_values(ws, "clips", ["intent.task=character", "intent.trigger=myaku"])
    created = create_run(ws, datasets=["clips"], base="framepack", now=NOW)
    spec, _ = load_run(ws, created.run_id)
    assert spec.training.sample_prompts == [] and spec.training.sample_every_n_epochs is None
    why = spec.provenance["training.sample_prompts"]
    assert why.startswith("not drafted: Musubi Tuner refuses") and "start image" in why
    # a person's prompt without --i is refused at once, naming the fix
    with pytest.raises(SpecError, match="samples from a start image") as refused:
        create_run(
            ws,
            datasets=["clips"],
            base="framepack",
            sets=['training.sample_prompts=["a walk"]', "training.sample_every_n_epochs=1"],
            now=datetime(2026, 11, 30, 11, 0),
        )
    assert "--i" in (refused.value.hint or "")


def test_a_trainer_without_an_image_drafts_the_host_executor(ws: Workspace) -> None:
    created = create_run(ws, datasets=["myaku"], base="moss-image-base", now=NOW)
    spec, _ = load_run(ws, created.run_id)
    assert spec.backend.name == "kohakumoss" and spec.execution.executor == "host"
    assert spec.provenance["execution.executor"].startswith("kohakumoss has no image (")
    # KohakuMoss's own recipe, not Musubi's
    assert (spec.training.optimizer, spec.training.scheduler) == ("adamw", "cosine")
    assert (spec.training.max_steps, spec.training.epochs, spec.training.warmup_steps) == (
        4000,
        None,
        100,
    )
    musubi = create_run(ws, datasets=["myaku"], base="zimage-base", now=NOW)
    assert load_run(ws, musubi.run_id)[0].execution.executor == "docker"


def test_a_video_dataset_drafts_the_trainers_own_frame_settings(
    ws: Workspace, tmp_path: Path
) -> None:
    from kura.dataset.registry import add_dataset
    from tests.dataset.dataset_builders import Builder

    clips = Builder(tmp_path / "clips")
    clips.video("0.mp4", 33, fps=16)
    add_dataset(ws, "clips", tmp_path / "clips")
    wan = create_run(ws, datasets=["clips"], base="wan2.1-t2v-1.3b", task="video", now=NOW)
    spec, _ = load_run(ws, wan.run_id)
    assert (spec.datasets[0].frames, spec.datasets[0].frame_extraction) == ([1, 25, 45], "head")
    assert "docs/dataset_config.md:158" in spec.provenance["datasets.0.frames"]
    aitk = create_run(ws, datasets=["clips"], base="aitk-wan2.1-t2v-1.3b", task="video", now=NOW)
    spec, _ = load_run(ws, aitk.run_id)
    assert spec.datasets[0].frames == [41] and spec.datasets[0].frame_extraction is None
    images = create_run(ws, datasets=["myaku"], base="wan2.1-t2v-1.3b", now=NOW)
    assert load_run(ws, images.run_id)[0].datasets[0].frames is None
