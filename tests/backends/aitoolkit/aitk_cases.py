"""Run specs and inputs for the AI-Toolkit backend's pure tests (no workspace)."""

from __future__ import annotations

from typing import Any

from kura.backends.base import CompileInputs, DatasetInput
from kura.schema.run import RunSpec

RUN_DIR = "/work/runs/20261201-0900"
RUN_ID = "20261201-0900"


def make_spec(**overrides: Any) -> RunSpec:
    config = overrides.pop("config", {"cache_text_embeddings": True})
    training = {
        "network": {"rank": 16, "alpha": 16.0},
        "learning_rate": 1e-4,
        "optimizer": "adamw8bit",
        "effective_batch": 2,
        "epochs": 4,
        "sample_prompts": ["a photo of myaku"],
        "sample_every_n_epochs": 2,
        **overrides.pop("training", {}),
    }
    datasets = overrides.pop("datasets", [{"name": "photos", "resolution": [1024], "repeats": 2}])
    return RunSpec.model_validate(
        {
            "id": RUN_ID,
            "model": {"base": overrides.pop("base", "aitk-qwen-image")},
            "datasets": datasets,
            "training": training,
            "backend": {"name": "ai-toolkit", "config": config},
            "execution": {"executor": "host", **overrides.pop("execution", {})},
            **overrides,
        }
    )


def image_dataset(
    name: str = "photos", *, control: bool = False, items: int = 10, trigger: str | None = None
) -> DatasetInput:
    return DatasetInput(
        name=name,
        media_dir=f"/data/{name}",
        caption_ext=".txt",
        control_dir=f"/data/{name}.control" if control else None,
        kind="image",
        items=items,
        image_sizes=((1024, 1024, items),),
        trigger=trigger,
    )


def video_dataset(name: str = "clips", items: int = 6) -> DatasetInput:
    return DatasetInput(
        name=name,
        media_dir=f"/data/{name}",
        caption_ext=".txt",
        control_dir=None,
        kind="video",
        source_fps=24.0,
        items=items,
    )


def make_inputs(
    bundle: str = "aitk-qwen-image",
    datasets: list[DatasetInput] | None = None,
    architecture: str | None = None,
) -> CompileInputs:
    from kura.backends.aitoolkit.archs import model_for

    model = model_for(bundle)
    arch = architecture or (model.architecture if model else "qwen_image")
    return CompileInputs(
        architecture=arch,
        model_version=None,
        model_paths={"dit": f"/models/{bundle}"},
        datasets=tuple(datasets or [image_dataset()]),
        run_dir=RUN_DIR,
        trainer_dir="/opt/ai-toolkit",
        bundle=bundle,
    )
