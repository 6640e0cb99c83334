"""Builders for Musubi compiler tests: run specs, inputs and the golden cases."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from kura.backends.musubi import ADAPTERS, CompileInputs, DatasetInput
from kura.schema.run import RunSpec

RUN_DIR = "/kura/runs/r1"
MUSUBI_DIR = "/opt/musubi-tuner"


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge ``extra`` into a copy of ``base``."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def make_spec(
    extra: dict[str, Any] | None = None, *, datasets: list[dict] | None = None
) -> RunSpec:
    base: dict[str, Any] = {
        "id": "r1",
        "model": {"base": "bundle"},
        "datasets": datasets or [{"name": "photos", "resolution": [1024, 1024]}],
        "training": {
            "network": {"rank": 32, "alpha": 16},
            "learning_rate": 1e-4,
            "optimizer": "adamw8bit",
            "effective_batch": 1,
            "epochs": 10,
            "seed": 42,
        },
    }
    return RunSpec.model_validate(merge(base, extra or {}))


def all_roles(architecture: str) -> dict[str, str]:
    """A path for every role any step of the architecture names."""
    adapter = ADAPTERS[architecture]
    roles = {r.role for rs in adapter.roles.values() for r in rs}
    roles |= {r.role for r in adapter.sample_roles}
    for variant in adapter.variants.values():
        roles |= {r.role for rs in variant.step_roles.values() for r in rs}
    roles.add("dit")
    if any(v.dual_dit_boundary is not None for v in adapter.variants.values()):
        roles.add("dit_high_noise")
    return {role: f"/models/{architecture}/{role}.safetensors" for role in sorted(roles)}


def image_dataset(
    name: str = "photos", *, control: bool = False, control_count: int | None = None
) -> DatasetInput:
    return DatasetInput(
        name=name,
        media_dir=f"/data/{name}",
        caption_ext=".txt",
        control_dir=f"/data/{name}-control" if control else None,
        kind="image",
        control_count=control_count,
    )


def video_dataset(name: str = "clips", *, fps: float | None = 30.0) -> DatasetInput:
    return DatasetInput(
        name=name,
        media_dir=f"/data/{name}",
        caption_ext=".txt",
        control_dir=None,
        kind="video",
        source_fps=fps,
    )


def make_inputs(
    architecture: str,
    version: str | None,
    datasets: list[DatasetInput] | None = None,
    *,
    roles: dict[str, str] | None = None,
    drop_roles: tuple[str, ...] = (),
    weight_dtypes: dict[str, str] | None = None,
    container_image: str | None = None,
) -> CompileInputs:
    paths = roles if roles is not None else all_roles(architecture)
    paths = {k: v for k, v in paths.items() if k not in drop_roles}
    return CompileInputs(
        architecture=architecture,
        model_version=version,
        model_paths=paths,
        datasets=datasets if datasets is not None else [image_dataset()],
        run_dir=RUN_DIR,
        trainer_dir=MUSUBI_DIR,
        weight_dtypes=weight_dtypes or {},
        container_image=container_image,
    )


@dataclass(frozen=True)
class Case:
    name: str
    architecture: str
    version: str | None
    spec: dict[str, Any] = field(default_factory=dict)
    spec_datasets: list[dict] | None = None
    datasets: list[DatasetInput] | None = None
    drop_roles: tuple[str, ...] = ()
    weight_dtypes: dict[str, str] | None = None
    container_image: str | None = None

    def build(self) -> tuple[RunSpec, CompileInputs]:
        config = self.spec.get("backend", {}).get("config", {})
        reasons = {"backend": {"reasons": {key: f"golden case needs {key}" for key in config}}}
        spec = make_spec(merge(self.spec, reasons), datasets=self.spec_datasets)
        inputs = make_inputs(
            self.architecture,
            self.version,
            self.datasets,
            drop_roles=self.drop_roles,
            weight_dtypes=self.weight_dtypes,
            container_image=self.container_image,
        )
        return spec, inputs


_VIDEO = [{"name": "clips", "resolution": [960, 544], "frames": [1, 25, 45]}]
_VIDEO_AND_IMAGE = [
    {"name": "clips", "resolution": [960, 544], "frames": [1, 25]},
    {"name": "photos", "resolution": [960, 544], "repeats": 2},
]
_EDIT = [{"name": "pairs", "resolution": [1024, 1024]}]
_FP8 = {"backend": {"config": {"fp8_base": True, "fp8_scaled": True}}}
_SAMPLES = {
    "training": {
        "sample_prompts": ["a red fox in snow --w 512 --h 512 --s 20 --d 1"],
        "sample_every_n_epochs": 2,
    }
}
_I2V_SAMPLES = {
    "training": {
        # An image-to-video model samples from a start image (issue 23 items 1 and 2): the
        # host path is mounted and the compiled line names the container's.
        "sample_prompts": [
            "a red fox in snow --w 512 --h 512 --s 20 --d 1 --i /home/me/start/fox one.png"
        ],
        "sample_every_n_epochs": 2,
    }
}


_FRAMEPACK_SAMPLES = {
    "training": {
        # FramePack samples from a start image (issue 23 items 1, 2): mounted, path rewritten.
        "sample_prompts": ["a red fox walks --w 640 --h 640 --i /home/me/start.png"],
        "sample_every_n_epochs": 2,
    }
}
_DRAFTED_SAMPLES = {
    "training": {
        # A caption with option syntax, as run new drafts it (issue 23 item 9): text only.
        "sample_prompts": ["myaku walking -s 5000 -f 999 -i /etc/passwd --w 1024 --h 1024"],
        "sample_every_n_epochs": 2,
    }
}


def _swap(blocks: int, **more: Any) -> dict[str, Any]:
    """Block swap, with the gradient checkpointing the fit ladder always turns on before it."""
    config = {"gradient_checkpointing": True, "blocks_to_swap": blocks, **more}
    return {"backend": {"config": config}}


CASES: tuple[Case, ...] = (
    Case(
        "hunyuan_video-video-plain",
        "hunyuan_video",
        None,
        spec_datasets=_VIDEO_AND_IMAGE,
        datasets=[video_dataset(fps=24.0), image_dataset()],
    ),
    Case(
        "hunyuan_video-video-and-images-batch2",
        "hunyuan_video",
        None,
        spec={
            "training": {"effective_batch": 2},
            "backend": {"config": {"batch_size": 2}},
        },
        spec_datasets=_VIDEO_AND_IMAGE,
        datasets=[video_dataset(fps=24.0), image_dataset()],
    ),
    Case(
        "hunyuan_video-video-chunk",
        "hunyuan_video",
        None,
        spec_datasets=[
            {
                "name": "clips",
                "resolution": [960, 544],
                "frames": [25, 45],
                "frame_extraction": "chunk",
            }
        ],
        datasets=[video_dataset(fps=24.0)],
    ),
    Case(
        "wan-t2v-14B-video-slide",
        "wan",
        "t2v-14B",
        spec_datasets=[
            {
                "name": "clips",
                "resolution": [960, 544],
                "frames": [1, 25],
                "frame_extraction": "slide",
                "frame_stride": 10,
            }
        ],
        datasets=[video_dataset(fps=30.0)],
        drop_roles=("image_encoder", "dit_high_noise"),
        weight_dtypes={"dit": "bf16"},
    ),
    Case(
        "wan-t2v-14B-video-with-images",
        "wan",
        "t2v-14B",
        spec={"training": {"effective_batch": 2}, "backend": {"config": {"batch_size": 2}}},
        spec_datasets=[{"name": "clips", "resolution": [960, 544], "frames": [1, 25]}],
        datasets=[replace(video_dataset(fps=30.0), images=7)],
        drop_roles=("image_encoder", "dit_high_noise"),
        weight_dtypes={"dit": "bf16"},
    ),
    Case(
        "hunyuan_video_1_5-t2v-video-uniform",
        "hunyuan_video_1_5",
        "t2v",
        spec_datasets=[
            {
                "name": "clips",
                "resolution": [960, 544],
                "frames": [1, 25],
                "frame_extraction": "uniform",
                "frame_sample": 3,
            }
        ],
        datasets=[video_dataset(fps=30.0)],
        drop_roles=("image_encoder",),
        weight_dtypes={"dit": "bf16"},
    ),
    Case(
        "hunyuan_video-fp8-swap",
        "hunyuan_video",
        None,
        spec=merge(
            {"backend": {"config": {"fp8_base": True, "fp8_llm": True}}},
            _swap(38),
        ),
        spec_datasets=_VIDEO,
        datasets=[video_dataset()],
    ),
    Case(
        "hunyuan_video_1_5-t2v-video",
        "hunyuan_video_1_5",
        "t2v",
        spec_datasets=_VIDEO,
        datasets=[video_dataset()],
        drop_roles=("image_encoder",),
        weight_dtypes={"dit": "bf16"},
    ),
    Case(
        "hunyuan_video_1_5-i2v-fp8-swap",
        "hunyuan_video_1_5",
        "i2v",
        spec=merge(merge(_FP8, _swap(51, fp8_vl=True)), {}),
        spec_datasets=_VIDEO,
        datasets=[video_dataset()],
        weight_dtypes={"dit": "bf16"},
    ),
    Case(
        "wan-t2v-14B-video-plain",
        "wan",
        "t2v-14B",
        spec={"training": {"learning_rate": 2e-4}},
        spec_datasets=_VIDEO,
        datasets=[video_dataset(fps=30.0)],
        drop_roles=("image_encoder", "dit_high_noise"),
        weight_dtypes={"dit": "bf16"},
    ),
    Case(
        "wan-t2v-A14B-dual-fp8-swap",
        "wan",
        "t2v-A14B",
        spec=merge(
            merge(_FP8, _swap(30, mixed_precision="fp16", fp8_t5=True)),
            {
                "training": {"effective_batch": 4},
                "backend": {"config": {"gradient_accumulation_steps": 4}},
            },
        ),
        spec_datasets=_VIDEO,
        datasets=[video_dataset(fps=24.0)],
        drop_roles=("image_encoder",),
        weight_dtypes={"dit": "fp16", "dit_high_noise": "fp16"},
    ),
    Case(
        "wan-i2v-14B-sampling",
        "wan",
        "i2v-14B",
        spec=_I2V_SAMPLES,
        spec_datasets=_VIDEO,
        datasets=[video_dataset(fps=16.0)],
        drop_roles=("dit_high_noise",),
        weight_dtypes={"dit": "bf16"},
    ),
    Case(
        "framepack-video-plain",
        "framepack",
        None,
        spec_datasets=[{"name": "clips", "resolution": [640, 640], "max_frames": 145}],
        datasets=[video_dataset()],
    ),
    Case(
        # As `run new` drafts it: Musubi's own max_frames (issue 23 items 3 and 5: the
        # semantics record what latent caching encodes, whole aligned clips).
        "framepack-drafted-sampling",
        "framepack",
        None,
        spec=_FRAMEPACK_SAMPLES,
        spec_datasets=[{"name": "clips", "resolution": [640, 640], "max_frames": 129}],
        datasets=[video_dataset()],
    ),
    Case(
        "framepack-f1-fp8",
        "framepack",
        "f1",
        spec=merge(_FP8, {"backend": {"config": {"fp8_llm": True}}}),
        spec_datasets=[{"name": "clips", "resolution": [640, 640], "max_frames": 97}],
        datasets=[video_dataset()],
    ),
    Case(
        "flux_kontext-paired-edit",
        "flux_kontext",
        None,
        spec_datasets=_EDIT,
        datasets=[image_dataset("pairs", control=True, control_count=1)],
    ),
    Case(
        "flux_kontext-fp8-swap",
        "flux_kontext",
        None,
        spec=merge(_FP8, _swap(34, fp8_t5=True)),
        spec_datasets=[{"name": "pairs", "resolution": [1024, 1024], "no_resize_control": True}],
        datasets=[image_dataset("pairs", control=True, control_count=1)],
    ),
    Case("flux2-klein-base-9b-plain", "flux2", "klein-base-9b"),
    Case(
        "flux2-dev-paired-edit-fp8-swap",
        "flux2",
        "dev",
        spec=merge(_FP8, _swap(29)),
        spec_datasets=[
            {
                "name": "pairs",
                "resolution": [1024, 1024],
                "no_resize_control": True,
                "control_resolution": [2024, 2024],
            }
        ],
        datasets=[image_dataset("pairs", control=True, control_count=1)],
    ),
    Case(
        "qwen_image-original-plain",
        "qwen_image",
        "original",
        spec={"training": {"learning_rate": 5e-5, "network": {"rank": 16, "alpha": 16}}},
    ),
    Case(
        "qwen_image-edit-2509-paired-edit-swap",
        "qwen_image",
        "edit-2509",
        spec=merge(
            merge(_FP8, _swap(45, fp8_vl=True, attention="xformers", split_attn=True)),
            {"training": {"timestep_sampling": "qwen_shift"}},
        ),
        spec_datasets=[
            {"name": "pairs", "resolution": [1024, 1024], "control_resolution": [1024, 1024]}
        ],
        datasets=[image_dataset("pairs", control=True, control_count=2)],
        container_image="example/musubi-xformers:0.3.4",
    ),
    Case("zimage-plain", "zimage", None),
    Case("zimage-plain-drafted-sampling", "zimage", None, spec=_DRAFTED_SAMPLES),
    Case(
        # At Qwen-Image's native size with a micro-batch of 2: buckets from each image's own
        # size at the run's resolution (issue 23 items 6 and 7).
        "qwen_image-original-native-batch2",
        "qwen_image",
        "original",
        spec={"training": {"effective_batch": 2}, "backend": {"config": {"batch_size": 2}}},
        spec_datasets=[{"name": "photos", "resolution": [1328, 1328]}],
    ),
    Case(
        "hidream_o1-full-t2i-native-batch2",
        "hidream_o1",
        "full",
        spec={"training": {"effective_batch": 2}, "backend": {"config": {"batch_size": 2}}},
        spec_datasets=[{"name": "photos", "resolution": [2048, 2048]}],
    ),
    Case(
        "zimage-fp8-swap-multi-gpu",
        "zimage",
        None,
        spec=merge(
            merge(_FP8, _swap(28, fp8_llm=True, block_swap_h2d_only=True, block_swap_ring_size=1)),
            {
                "training": {"effective_batch": 4},
                "execution": {"gpus": 2},
                "backend": {"config": {"gradient_accumulation_steps": 2}},
            },
        ),
    ),
    Case(
        "kandinsky5-pro-video",
        "kandinsky5",
        "k5-pro-t2v-5s-sd",
        spec={
            "training": {
                "network": {"rank": 32, "alpha": 32},
                "optimizer": "AdamW8Bit",
                "optimizer_args": ["weight_decay=0.001", "betas=(0.9,0.95)"],
                "scheduler": "constant_with_warmup",
                "warmup_steps": 100,
                "max_grad_norm": 1.0,
                "epochs": 50,
            },
            "backend": {"config": {"fp8_base": True}},
        },
        spec_datasets=_VIDEO,
        datasets=[video_dataset(fps=24.0)],
    ),
    Case(
        "hidream_o1-full-t2i",
        "hidream_o1",
        "full",
        spec={"training": {"learning_rate": 4e-5}},
    ),
    Case(
        "hidream_o1-dev-i2i-fp8-swap",
        "hidream_o1",
        "dev",
        spec=merge(_FP8, _swap(24, fp8_te=True)),
        spec_datasets=_EDIT,
        datasets=[image_dataset("pairs", control=True, control_count=1)],
    ),
    Case("ideogram4-plain-sampling", "ideogram4", None, spec=_SAMPLES),
    Case("krea2-plain", "krea2", None, spec={"training": {"network": {"rank": 32, "alpha": 32}}}),
    Case(
        "krea2-fp8-swap",
        "krea2",
        None,
        spec=merge(_FP8, _swap(26, use_pinned_memory_for_block_swap=True)),
    ),
)
