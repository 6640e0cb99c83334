"""The Dockerfile and the compiler's container spec agree on release, paths and env."""

from __future__ import annotations

from kura.backends.musubi import MUSUBI_RELEASE, MUSUBI_TAG
from kura.backends.musubi.container import (
    DEFAULT_IMAGE,
    DOCKERFILE,
    IMAGE_HF_HOME,
    IMAGE_MUSUBI_DIR,
)


def test_dockerfile_builds_the_pinned_release() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert f"ARG MUSUBI_TAG={MUSUBI_TAG}" in text
    assert f'org.opencontainers.image.version="{MUSUBI_RELEASE}"' in text
    assert f"kura/musubi-tuner:{MUSUBI_RELEASE}" == DEFAULT_IMAGE


def test_dockerfile_paths_match_the_container_spec() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert f"HF_HOME={IMAGE_HF_HOME}" in text
    assert f"WORKDIR {IMAGE_MUSUBI_DIR}" in text
    assert "HF_HUB_OFFLINE=1" in text
    assert "download.pytorch.org/whl/cu" in text


def test_dockerfile_bakes_every_runtime_tokenizer() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    for repo in (
        "openai/clip-vit-large-patch14",
        "xtuner/llava-llama-3-8b-v1_1-transformers",
        "hunyuanvideo-community/HunyuanVideo",
        "google/umt5-xxl",
        "google/t5-v1_1-xxl",
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        "Qwen/Qwen3-4B",
        "Qwen/Qwen3-8B",
        "Qwen/Qwen-Image",
        "Qwen/Qwen-Image-Edit",
        "Qwen/Qwen2.5-VL-7B-Instruct",
        "google/byt5-small",
        "Tongyi-MAI/Z-Image",
        "Qwen/Qwen3-VL-8B-Instruct",
        "Qwen/Qwen3-VL-4B-Instruct",
        "HiDream-ai/HiDream-O1-Image",
        "HiDream-ai/HiDream-O1-Image-Dev",
    ):
        assert f'"{repo}"' in text, repo
