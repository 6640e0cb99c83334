"""Why an AI-Toolkit step failed, from the log it wrote in this attempt.

Markers are AI-Toolkit's own prints (27a03a9): ``run.py`` prints ``Error running job: <msg>``
and re-raises (non-zero exit), ``Job stopped`` after a SIGINT (exit 0);
``BaseSDTrainProcess.run`` skips a batch on OOM (``# OOM during training step, skipping
batch n/3 #``) and raises ``OOM during training step 3 times in a row`` on the fourth; an
OOM while loading, caching or sampling is torch's ``CUDA out of memory`` traceback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kura.backends.base import Diagnosis

__all__ = ["diagnose_text", "stopped"]

_OOM = re.compile(
    r"(OOM during training step 3 times in a row[^\n]*|torch\.OutOfMemoryError[^\n]*|"
    r"CUDA out of memory[^\n]*|CUDA error: out of memory[^\n]*)"
)
_SKIPPED = re.compile(r"# OOM during training step, skipping batch \d/3 #")
_ERROR = re.compile(r"Error running job: (?P<msg>[^\n]*)")
_PHASES = (
    ("sampling", re.compile(r"Generating baseline samples|Generating Images|Generating images")),
    ("caching", re.compile(r"Caching latents|Caching text embeddings|caching latents")),
    ("loading", re.compile(r"Loading (?:transformer|model|Flux2|VAE|text encoder)|Quantizing")),
    ("training", re.compile(r"\d+/\d+ \[[\d:]+<")),
)
_STOPPED = re.compile(r"^Job stopped$", re.MULTILINE)


def stopped(log_text: str, exit_code: int | None) -> bool:
    """True when run.py caught a SIGINT: it prints "Job stopped" and exits 0."""
    return exit_code == 0 and bool(_STOPPED.search(log_text))


def _phase(text: str, end: int) -> str:
    """The last phase marker before ``end`` in the log."""
    best, where = "training", -1
    for phase, pattern in _PHASES:
        for match in pattern.finditer(text, 0, end):
            if match.start() > where:
                best, where = phase, match.start()
    return best


def diagnose_text(
    log_text: str, *, step: str, exit_code: int | None, config: Mapping[str, object]
) -> Diagnosis:
    from kura.backends.aitoolkit.fit import next_rung

    text = log_text.replace("\r", "\n")
    oom = list(_OOM.finditer(text))
    if oom:
        phase = _phase(text, oom[-1].start())
        skipped = len(_SKIPPED.findall(text))
        return Diagnosis(
            "cuda_oom",
            step,
            f"AI-Toolkit ran out of GPU memory while {phase}"
            + (f" (after skipping {skipped} batches)" if skipped else ""),
            oom[-1].group(0).strip(),
            next_rung(config, step=step, phase=phase),
            phase,
            exit_code,
            {"skipped_batches": skipped},
        )
    if exit_code in (-9, 137) or re.search(r"^Killed$", text, re.MULTILINE):
        return Diagnosis(
            "host_oom",
            step,
            "the trainer was killed (host memory, or the OOM killer)",
            "Killed" if "Killed" in text else f"exit {exit_code}",
            {
                "action": "change",
                "key": "host_ram",
                "why": "low_vram and layer offloading "
                "need host RAM; free memory or use a machine with more",
            },
            None,
            exit_code,
        )
    error = list(_ERROR.finditer(text))
    message = error[-1]["msg"].strip() if error else ""
    if "Environment variable" in message and "not set" in message:
        code, why = "bad_arguments", "the job file names an environment variable that is unset"
    elif re.search(r"does not exist|No such file|Could not find config", message):
        code, why = "missing_files", "a file the job names is not there"
    elif re.search(r"401|403|gated|Unauthorized", message):
        code, why = "missing_files", "a gated Hugging Face repository needs HF_TOKEN"
    elif re.search(r"ConnectionError|Max retries|offline|Temporary failure", message):
        code, why = "offline", "AI-Toolkit could not reach the Hugging Face Hub"
    elif re.search(r"\bnan\b", message, re.IGNORECASE):
        code, why = "nan_loss", "the loss became NaN"
    else:
        code, why = "unknown", "AI-Toolkit stopped with an error"
    return Diagnosis(
        code,
        step,
        why + (f": {message}" if message else ""),
        error[-1].group(0) if error else "",
        {"action": "read_log", "why": "see the step log"},
        None,
        exit_code,
    )
