"""Why a Musubi step failed, read from its log: one plain diagnosis with the line that proves it and
the one thing to do next.

Codes: ``cuda_oom``, ``host_oom``, ``missing_files``, ``offline``, ``bad_arguments``,
``dataset_config``, ``nan_loss``, ``unknown``. For a CUDA out-of-memory the next action is
"one rung up the ladder" of memory savings, chosen from the run's backend config (the flat
``exec`` keys of the Musubi backend: ``gradient_checkpointing``, ``fp8_base``,
``blocks_to_swap``, ``batch_size`` …): the cheapest saving not yet in use.
"""

from __future__ import annotations

import re
from typing import Any

from kura.backends.base import Diagnosis

__all__ = ["diagnose_text", "oom_next_rung"]

_TE_FP8_KEYS = ("fp8_llm", "fp8_t5", "fp8_vl", "fp8_text_encoder", "fp8_te")
_BLOCK_SWAP_RUNG = 8

_CUDA_OOM = re.compile(
    r"(torch\.(?:cuda\.)?OutOfMemoryError: CUDA out of memory.*"
    r"|RuntimeError: CUDA out of memory.*"
    r"|CUDA error: out of memory.*"
    r"|RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED.*)"
)
_HOST_OOM = re.compile(
    r"(^Killed\s*$|^MemoryError.*|.*\bMemoryError\b.*"
    r"|.*DefaultCPUAllocator: (?:can't|not enough memory).*"
    r"|.*[Kk]illed by signal 9.*|.*Out of memory: Killed process.*)",
    re.MULTILINE,
)
_OFFLINE = re.compile(
    r"(.*OSError: We couldn't connect to 'https://huggingface\.co'.*"
    r"|.*OfflineModeIsEnabled.*|.*LocalEntryNotFoundError.*"
    r"|.*Cannot reach https://huggingface\.co.*)"
)
_MISSING = re.compile(
    r"(.*FileNotFoundError: .*"
    r"|.*No such file or directory: .*"
    r"|.*file not found / ファイルが見つかりません.*"
    r"|.*OSError: .* does not appear to have a file named .*"
    r"|.*OSError: Can't load tokenizer.*)"
)
_ARGPARSE = re.compile(
    r"(.*error: (?:unrecognized arguments: .*|the following arguments are required: .*"
    r"|argument --?\S+: .*))"
)
_DATASET = re.compile(
    r"(.*(?:MultipleInvalid|Invalid): .*@ data\[.*"
    r"|.*extra keys not allowed @ data\[.*"
    r"|.*required key not provided @ data\[.*"
    r"|.*expected \w+ for dictionary value @ data\[.*)"
)
_NAN = re.compile(r"(avr_loss=(?:nan|inf)\b.*|.*\bloss is (?:NaN|nan)\b.*)", re.IGNORECASE)
_QUOTED_PATH = re.compile(r"""['"]([^'"]+)['"]\s*$""")
_TRIED = re.compile(r"Tried to allocate ([\d.]+ [GMK]iB)")
_SAMPLING = re.compile(r"generating sample images|Sampling timesteps for prompt")
_PROGRESS = re.compile(r"steps:\s+\d+%\|.*?\|\s*(\d+)/\d+")
_TRAINING_STARTED = re.compile(r"running training / |^epoch \d+/\d+", re.MULTILINE)


def diagnose_text(
    text: str, *, step: str, exit_code: int | None, config: dict[str, Any] | None = None
) -> Diagnosis:
    """The first diagnosis that fits, from the most specific evidence to the least."""
    config = config or {}
    lines = _logical_lines(text)
    for finder in (_cuda_oom, _dataset_config, _arguments, _offline, _missing, _nan, _host_oom):
        found = finder(lines, step, exit_code, config)
        if found is not None:
            return found
    return Diagnosis(
        code="unknown",
        step=step,
        message=f"step {step} failed ({_exit_words(exit_code)}) for a reason Kura does not "
        "recognise",
        evidence=_last_error_line(lines),
        next={"action": "read_log", "step": step},
        exit_code=exit_code,
    )


def _logical_lines(text: str) -> list[str]:
    """Split on newlines and carriage returns, so progress redraws become separate lines."""
    return [part.rstrip() for part in re.split(r"[\r\n]+", text) if part.strip()]


def _last_match(lines: list[str], pattern: re.Pattern[str]) -> tuple[int, str] | None:
    for index in range(len(lines) - 1, -1, -1):
        match = pattern.search(lines[index])
        if match:
            return index, lines[index].strip()
    return None


def _cuda_oom(
    lines: list[str], step: str, exit_code: int | None, config: dict[str, Any]
) -> Diagnosis | None:
    hit = _last_match(lines, _CUDA_OOM)
    if hit is None:
        return None
    index, line = hit
    phase = _oom_phase(lines[:index], step)
    tried = _TRIED.search(line)
    where = {
        "caching": "while caching",
        "sampling": "while generating sample images",
        "training": "during a training step",
        "model_loading": "while loading the model",
    }[phase]
    message = f"the GPU ran out of memory {where} (step {step})"
    if tried:
        message += f", asking for {tried.group(1)} more"
    return Diagnosis(
        code="cuda_oom",
        step=step,
        phase=phase,
        message=message,
        evidence=line,
        next=oom_next_rung(config, step=step, phase=phase),
        exit_code=exit_code,
    )


def _oom_phase(before: list[str], step: str) -> str:
    if step.startswith("cache"):
        return "caching"
    last_progress = last_sample = -1
    started = False
    for index, line in enumerate(before):
        if _PROGRESS.search(line):
            last_progress = index
        if _SAMPLING.search(line):
            last_sample = index
        if _TRAINING_STARTED.search(line):
            started = True
    if last_sample > last_progress or (last_sample >= 0 and last_progress < 0):
        return "sampling"
    if last_progress >= 0 or started:
        return "training"
    return "model_loading"


def oom_next_rung(config: dict[str, Any], *, step: str, phase: str) -> dict[str, Any]:
    """The next memory saving to try, cheapest first, skipping those already in use."""
    if phase == "caching":
        return _caching_rung(config, step)
    if phase == "sampling":
        return {
            "action": "disable",
            "key": "sample_prompts",
            "why": "training fits; sampling does not",
        }
    if not config.get("gradient_checkpointing", False):
        return {"action": "enable", "key": "gradient_checkpointing"}
    if "fp8_base" in config and not config.get("fp8_base"):
        return {"action": "enable", "key": "fp8_base"}
    if "fp8_scaled" in config and config.get("fp8_base") and not config.get("fp8_scaled"):
        return {"action": "enable", "key": "fp8_scaled"}
    swap = int(config.get("blocks_to_swap", 0) or 0)
    limit = config.get("max_blocks_to_swap")
    if limit is None or swap < int(limit):
        target = swap + _BLOCK_SWAP_RUNG
        if limit is not None:
            target = min(target, int(limit))
        return {"action": "increase", "key": "blocks_to_swap", "from": swap, "to": target}
    batch = int(config.get("batch_size", 1) or 1)
    if batch > 1:
        return {"action": "decrease", "key": "batch_size", "from": batch, "to": max(1, batch // 2)}
    return {"action": "change", "key": "gpu", "why": "every memory saving is already in use"}


def _caching_rung(config: dict[str, Any], step: str) -> dict[str, Any]:
    if step == "cache_text_encoder":
        for key in _TE_FP8_KEYS:
            if key in config and not config.get(key):
                return {"action": "enable", "key": key}
    elif "vae_tiling" in config and not config.get("vae_tiling"):
        return {"action": "enable", "key": "vae_tiling"}
    elif "vae_chunk_size" in config:
        chunk = config.get("vae_chunk_size")
        if chunk is None or int(chunk) > 1:
            start = int(chunk) if chunk else 32
            target = max(1, start // 2)
            return {"action": "decrease", "key": "vae_chunk_size", "from": chunk, "to": target}
    batch = int(config.get("batch_size", 1) or 1)
    if batch > 1:
        return {"action": "decrease", "key": "batch_size", "from": batch, "to": max(1, batch // 2)}
    why = "caching already runs at its smallest settings"
    return {"action": "change", "key": "gpu", "why": why}


def _dataset_config(
    lines: list[str], step: str, exit_code: int | None, config: dict[str, Any]
) -> Diagnosis | None:
    hit = _last_match(lines, _DATASET)
    if hit is None:
        return None
    _, line = hit
    where = re.search(r"@ (data\[.*?\])\s*$", line)
    return Diagnosis(
        code="dataset_config",
        step=step,
        message="Musubi refused the dataset config: "
        + line.split(": ", 1)[-1].split(" @ ")[0]
        + (f" at {where.group(1)}" if where else ""),
        evidence=line,
        next={"action": "fix_dataset_config", "where": where.group(1) if where else None},
        exit_code=exit_code,
    )


def _arguments(
    lines: list[str], step: str, exit_code: int | None, config: dict[str, Any]
) -> Diagnosis | None:
    hit = _last_match(lines, _ARGPARSE)
    if hit is None:
        return None
    _, line = hit
    problem = line.split("error: ", 1)[1]
    return Diagnosis(
        code="bad_arguments",
        step=step,
        message=f"Musubi refused its command line: {problem}",
        evidence=line,
        next={"action": "fix_arguments", "detail": problem},
        exit_code=exit_code,
    )


def _offline(
    lines: list[str], step: str, exit_code: int | None, config: dict[str, Any]
) -> Diagnosis | None:
    hit = _last_match(lines, _OFFLINE)
    if hit is None:
        return None
    _, line = hit
    return Diagnosis(
        code="offline",
        step=step,
        message="a model or tokenizer file is not on disk and Hugging Face could not be reached "
        "(offline mode or no network)",
        evidence=line,
        next={"action": "download_models", "why": "fetch the files while online, then relaunch"},
        exit_code=exit_code,
    )


def _missing(
    lines: list[str], step: str, exit_code: int | None, config: dict[str, Any]
) -> Diagnosis | None:
    hit = _last_match(lines, _MISSING)
    if hit is None:
        return None
    _, line = hit
    quoted = _QUOTED_PATH.search(line)
    path = quoted.group(1) if quoted else line.rsplit(": ", 1)[-1].strip()
    return Diagnosis(
        code="missing_files",
        step=step,
        message=f"a file the step needs does not exist: {path}",
        evidence=line,
        next={"action": "provide_file", "path": path},
        exit_code=exit_code,
    )


def _nan(
    lines: list[str], step: str, exit_code: int | None, config: dict[str, Any]
) -> Diagnosis | None:
    hit = _last_match(lines, _NAN)
    if hit is None:
        return None
    _, line = hit
    if config.get("mixed_precision") == "fp16":
        action = {"action": "change", "key": "mixed_precision", "from": "fp16", "to": "bf16"}
    else:
        action = {"action": "decrease", "key": "learning_rate"}
    return Diagnosis(
        code="nan_loss",
        step=step,
        message="the training loss became NaN: the run diverged",
        evidence=line,
        next=action,
        exit_code=exit_code,
    )


def _host_oom(
    lines: list[str], step: str, exit_code: int | None, config: dict[str, Any]
) -> Diagnosis | None:
    hit = _last_match(lines, _HOST_OOM)
    killed = exit_code in (-9, 137)
    if hit is None and not killed:
        return None
    evidence = hit[1] if hit else f"exit status {exit_code} (killed by signal 9)"
    if config.get("use_pinned_memory_for_block_swap"):
        action: dict[str, Any] = {"action": "disable", "key": "use_pinned_memory_for_block_swap"}
    elif int(config.get("max_data_loader_n_workers", 0) or 0) > 1:
        workers = int(config["max_data_loader_n_workers"])
        action = {
            "action": "decrease",
            "key": "max_data_loader_n_workers",
            "from": workers,
            "to": 1,
        }
    else:
        action = {"action": "change", "key": "host_memory", "why": "the machine needs more RAM"}
    return Diagnosis(
        code="host_oom",
        step=step,
        message=f"the machine ran out of RAM and step {step} was killed",
        evidence=evidence,
        next=action,
        exit_code=exit_code,
    )


def _last_error_line(lines: list[str]) -> str:
    for line in reversed(lines):
        stripped = line.strip()
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b", stripped):
            return stripped
    return lines[-1].strip() if lines else ""


def _exit_words(exit_code: int | None) -> str:
    if exit_code is None:
        return "exit status unknown"
    if exit_code < 0:
        return f"killed by signal {-exit_code}"
    return f"exit status {exit_code}"
