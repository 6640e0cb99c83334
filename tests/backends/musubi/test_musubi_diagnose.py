"""Failure diagnosis from real-looking Musubi / PyTorch log text."""

from __future__ import annotations

from pathlib import Path

import pytest

from kura.backends.musubi.diagnose import diagnose_text, oom_next_rung
from kura.execution.logs import diagnose_step

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.55 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this "
    "process has 22.41 GiB memory in use. Of the allocated memory 21.87 GiB is allocated by "
    "PyTorch, and 301.45 MiB is reserved by PyTorch but unallocated."
)
TRACE_HEAD = (
    "Traceback (most recent call last):\n"
    '  File "/app/src/musubi_tuner/wan_train_network.py", line 482, in <module>\n'
    "    main()\n"
)
TRAINING = (
    "running training / 学習開始\n"
    "epoch 1/4\n"
    "\rsteps:   1%|          | 3/400 [00:09<20:00,  3.02s/it, avr_loss=0.121]"
)


def test_cuda_oom_during_training() -> None:
    found = diagnose_text(
        TRAINING + "\n" + TRACE_HEAD + OOM + "\n",
        step="train",
        exit_code=1,
        config={"gradient_checkpointing": True, "fp8_base": False},
    )
    assert found.code == "cuda_oom"
    assert found.phase == "training"
    assert found.step == "train"
    assert "2.00 GiB" in found.message
    assert found.evidence.startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert found.next == {"action": "enable", "key": "fp8_base"}


def test_cuda_oom_while_sampling() -> None:
    text = (
        TRAINING + "\nINFO:musubi_tuner.training.trainer_base:generating sample images at step / "
        "サンプル画像生成 ステップ: 100\n"
        "Sampling timesteps for prompt 1:  40%|████      | 8/20 [00:04<00:06,  1.9it/s]\n"
        + TRACE_HEAD
        + OOM
    )
    found = diagnose_text(text, step="train", exit_code=1, config={})
    assert found.phase == "sampling"
    assert found.next["action"] == "disable"


def test_cuda_oom_while_loading_the_model() -> None:
    text = "INFO:musubi_tuner.wan_train_network:Loading DiT model\n" + TRACE_HEAD + OOM
    found = diagnose_text(text, step="train", exit_code=1, config={})
    assert found.phase == "model_loading"
    assert found.next == {"action": "enable", "key": "gradient_checkpointing"}


def test_cuda_oom_in_caching_steps() -> None:
    latents = diagnose_text(
        "INFO:Encoding dataset [0]\n" + TRACE_HEAD + OOM,
        step="cache_latents",
        exit_code=1,
        config={"vae_tiling": False},
    )
    assert (latents.code, latents.phase) == ("cuda_oom", "caching")
    assert latents.next == {"action": "enable", "key": "vae_tiling"}
    text_encoder = diagnose_text(
        TRACE_HEAD + "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB",
        step="cache_text_encoder",
        exit_code=1,
        config={"fp8_t5": False, "batch_size": 4},
    )
    assert text_encoder.next == {"action": "enable", "key": "fp8_t5"}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, {"action": "enable", "key": "gradient_checkpointing"}),
        (
            {"gradient_checkpointing": True, "fp8_base": True, "fp8_scaled": False},
            {"action": "enable", "key": "fp8_scaled"},
        ),
        (
            {"gradient_checkpointing": True, "blocks_to_swap": 0},
            {"action": "increase", "key": "blocks_to_swap", "from": 0, "to": 8},
        ),
        (
            {"gradient_checkpointing": True, "blocks_to_swap": 36, "max_blocks_to_swap": 39},
            {"action": "increase", "key": "blocks_to_swap", "from": 36, "to": 39},
        ),
        (
            {
                "gradient_checkpointing": True,
                "blocks_to_swap": 39,
                "max_blocks_to_swap": 39,
                "batch_size": 4,
            },
            {"action": "decrease", "key": "batch_size", "from": 4, "to": 2},
        ),
        (
            {"gradient_checkpointing": True, "blocks_to_swap": 39, "max_blocks_to_swap": 39},
            {"action": "change", "key": "gpu", "why": "every memory saving is already in use"},
        ),
    ],
)
def test_oom_ladder(config: dict[str, object], expected: dict[str, object]) -> None:
    assert oom_next_rung(config, step="train", phase="training") == expected


@pytest.mark.parametrize(
    ("text", "exit_code"),
    [
        (TRAINING + "\nKilled\n", 137),
        (TRAINING, -9),
        (TRACE_HEAD + "MemoryError\n", 1),
        (
            TRACE_HEAD + "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. "
            "DefaultCPUAllocator: not enough memory: you tried to allocate 8589934592 bytes.",
            1,
        ),
    ],
)
def test_host_memory_exhaustion(text: str, exit_code: int) -> None:
    found = diagnose_text(
        text, step="train", exit_code=exit_code, config={"max_data_loader_n_workers": 8}
    )
    assert found.code == "host_oom"
    assert found.next["key"] == "max_data_loader_n_workers"


def test_missing_model_file() -> None:
    text = TRACE_HEAD + (
        "FileNotFoundError: [Errno 2] No such file or directory: "
        "'/models/wan2.1_t2v_14B_bf16.safetensors'"
    )
    found = diagnose_text(text, step="train", exit_code=1)
    assert found.code == "missing_files"
    assert found.next == {
        "action": "provide_file",
        "path": "/models/wan2.1_t2v_14B_bf16.safetensors",
    }


def test_offline_tokenizer() -> None:
    text = TRACE_HEAD + (
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
        "find it in the cached files and it looks like Qwen/Qwen2.5-VL-7B-Instruct is not the "
        "path to a directory containing a file named tokenizer_config.json."
    )
    found = diagnose_text(text, step="cache_text_encoder", exit_code=1)
    assert found.code == "offline"
    assert found.step == "cache_text_encoder"
    assert found.next["action"] == "download_models"


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        (
            "wan_train_network.py: error: unrecognized arguments: --fp8_llm",
            "unrecognized arguments: --fp8_llm",
        ),
        (
            "wan_train_network.py: error: the following arguments are required: --dit",
            "the following arguments are required: --dit",
        ),
        (
            "wan_train_network.py: error: argument --mixed_precision: invalid choice: 'fp32' "
            "(choose from 'no', 'fp16', 'bf16')",
            "argument --mixed_precision: invalid choice: 'fp32' (choose from 'no', 'fp16', 'bf16')",
        ),
    ],
)
def test_argument_errors(line: str, detail: str) -> None:
    text = "usage: wan_train_network.py [-h] [--dit DIT] ...\n" + line + "\n"
    found = diagnose_text(text, step="train", exit_code=2)
    assert found.code == "bad_arguments"
    assert found.next == {"action": "fix_arguments", "detail": detail}
    assert found.evidence == line


def test_dataset_config_error() -> None:
    text = (
        "ERROR:musubi_tuner.dataset.config_utils:Invalid user config / "
        "ユーザ設定の形式が正しくないようです\n"
        + TRACE_HEAD
        + "voluptuous.error.MultipleInvalid: extra keys not allowed @ "
        "data['datasets'][0]['image_dirr']\n"
    )
    found = diagnose_text(text, step="train", exit_code=1)
    assert found.code == "dataset_config"
    assert found.next["where"] == "data['datasets'][0]['image_dirr']"
    assert "extra keys not allowed" in found.message


def test_nan_loss() -> None:
    text = "\rsteps:   1%|          | 4/400 [00:12<20:00,  3.02s/it, avr_loss=nan]"
    found = diagnose_text(text, step="train", exit_code=1, config={"mixed_precision": "fp16"})
    assert found.code == "nan_loss"
    assert found.next == {
        "action": "change",
        "key": "mixed_precision",
        "from": "fp16",
        "to": "bf16",
    }


def test_unknown_failure_quotes_the_exception() -> None:
    text = TRACE_HEAD + "ValueError: something odd happened\nsome trailing line\n"
    found = diagnose_text(text, step="train", exit_code=1)
    assert found.code == "unknown"
    assert found.evidence == "ValueError: something odd happened"
    assert found.next == {"action": "read_log", "step": "train"}


def test_log_file_reads_from_the_attempt_offset(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    first = TRACE_HEAD + OOM + "\n"
    log.write_text(first + TRACE_HEAD + "ValueError: second attempt\n")
    found = diagnose_step(
        log,
        backend="musubi-tuner",
        step="train",
        exit_code=1,
        config={},
        offset=len(first.encode()),
    )
    assert found["code"] == "unknown"
    assert found["evidence"] == "ValueError: second attempt"
