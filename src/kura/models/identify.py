"""Identify a model file from its safetensors header alone (never from its file name).

``identify(path)`` reads the header (and, for ``…-00001-of-0000N.safetensors`` shards, the
headers of its sibling shards, as Musubi loads them together), removes a known key prefix,
works out precision and quantisation, recognises LoRA files, and matches the signature
table in :mod:`kura.models.signatures`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kura.errors import InvalidInput
from kura.models.header import (
    SafetensorsHeader,
    TensorInfo,
    parse_header,
    read_header_bytes,
)
from kura.models.lora import LoraFacts, detect_lora
from kura.models.quant import Precision, detect_precision
from kura.models.signatures import COMPONENTS, DIT_PREFIXES, Component, Match

__all__ = ["ModelReport", "identify", "identify_header", "shard_siblings"]

_SHARD_RE = re.compile(r"^(?P<stem>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.safetensors$")
_TE_PREFIX_RE = re.compile(r"^(text_encoders\.[A-Za-z0-9_]+\.transformer\.)")


@dataclass(frozen=True)
class ModelReport:
    """What a model file is, as far as its header says."""

    path: str
    component: str
    role: str
    title: str
    architectures: tuple[str, ...]
    variant: str | None
    candidates: tuple[str, ...]
    dtype: str
    quantization: str
    quantization_formats: tuple[str, ...]
    key_prefix: str
    format: str
    params: int
    size: int
    header_digest: str
    tensor_count: int
    shards: tuple[str, ...] = ()
    lora_format: str | None = None
    rank: int | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["architectures"] = list(self.architectures)
        doc["candidates"] = list(self.candidates)
        doc["quantization_formats"] = list(self.quantization_formats)
        doc["shards"] = list(self.shards)
        doc["notes"] = list(self.notes)
        doc["facts"] = _plain(dict(self.facts))
        return doc


def identify(path: Path | str) -> ModelReport:
    """Read ``path``'s header (plus sibling shards) and say what the file is.

    A report is kept in this process for the exact header bytes and file sizes it was made
    from: planning, approving and launching a run judge the same files several times (a
    sweep worker for every trial), and reading a header costs little beside parsing it and
    matching its tensors."""
    path = Path(path)
    files = shard_siblings(path) or [path]
    read = [(file, *read_header_bytes(file)) for file in files]
    key = tuple((str(file), size, hashlib.sha256(raw).digest()) for file, raw, size in read)
    known = _REPORTS.get(key)
    if known is not None:
        return known
    headers = [parse_header(raw, size, path=file) for file, raw, size in read]
    report = identify_header(headers[0], extra=headers[1:])
    if len(_REPORTS) >= _REPORTS_KEPT:
        _REPORTS.pop(next(iter(_REPORTS)))
    _REPORTS[key] = report
    return report


_REPORTS: dict[tuple[tuple[str, int, bytes], ...], ModelReport] = {}
_REPORTS_KEPT = 256


def shard_siblings(path: Path) -> list[Path]:
    """All shards of a ``name-0000i-of-0000N.safetensors`` set, first to last; empty when
    ``path`` is not a shard. A missing sibling is an error: the set is incomplete."""
    found = _SHARD_RE.match(path.name)
    if not found:
        return []
    count = int(found["count"])
    width = len(found["count"])
    siblings = [
        path.with_name(f"{found['stem']}-{i:0{width}d}-of-{found['count']}.safetensors")
        for i in range(1, count + 1)
    ]
    missing = [p.name for p in siblings if not p.is_file()]
    if missing:
        raise InvalidInput(
            f"{path} is shard {int(found['index'])} of {count}, but {', '.join(missing)} is "
            "missing",
            hint="download every shard into the same folder (Musubi loads them together)",
            path=path,
        )
    return siblings


def identify_header(
    header: SafetensorsHeader, *, extra: Sequence[SafetensorsHeader] = ()
) -> ModelReport:
    """Identify from already-read headers (``extra``: the other shards of a set)."""
    tensors: dict[str, TensorInfo] = dict(header.tensors)
    for other in extra:
        tensors.update(other.tensors)
    metadata = dict(header.metadata)
    size = header.size + sum(h.size for h in extra)
    shard_paths = tuple(str(h.path) for h in (header, *extra)) if extra else ()
    precision = detect_precision(tensors, metadata)
    params = _count_params(tensors, precision)
    common: dict[str, Any] = {
        "path": str(header.path),
        "dtype": precision.dtype,
        "quantization": precision.quantization,
        "quantization_formats": precision.formats,
        "params": params,
        "size": size,
        "header_digest": header.header_digest,
        "tensor_count": len(tensors),
        "shards": shard_paths,
    }
    lora = detect_lora(tensors, metadata)
    if lora is not None:
        return _lora_report(lora, common)
    prefix, shapes = _normalise(tensors, precision)
    component = _match_component(shapes)
    if component is None:
        return ModelReport(
            component="unknown",
            role="unknown",
            title="a safetensors file Kura does not recognise",
            architectures=(),
            variant=None,
            candidates=(),
            key_prefix=prefix,
            format="unknown",
            notes=("no signature in Kura's table matches this header",),
            **common,
        )
    notes = [component.note] if component.note else []
    if prefix == "model.diffusion_model." and any(
        k.startswith(("vae.", "text_encoders.", "first_stage_model.")) for k in tensors
    ):
        notes.append("an all-in-one checkpoint: it also holds a VAE and/or text encoders")
    return ModelReport(
        component=component.id,
        role=component.role,
        title=component.title,
        architectures=component.architectures,
        variant=component.variant,
        candidates=component.candidates,
        key_prefix=prefix,
        format=component.format,
        facts=component.facts,
        notes=tuple(notes),
        **common,
    )


def _lora_report(lora: LoraFacts, common: dict[str, Any]) -> ModelReport:
    return ModelReport(
        component="lora",
        role="lora",
        title=f"a LoRA adapter ({lora.format} format)",
        architectures=lora.architectures,
        variant=lora.algorithm,
        candidates=(),
        key_prefix=lora.prefix,
        format=lora.format,
        lora_format=lora.format,
        rank=lora.rank,
        facts={"alpha": lora.alpha, "modules": lora.modules},
        notes=lora.notes,
        **common,
    )


def _count_params(tensors: Mapping[str, TensorInfo], precision: Precision) -> int:
    total = 0
    for name, info in tensors.items():
        if name in precision.sidecars:
            continue
        count = info.numel
        if name.endswith(".weight") and name[: -len(".weight")] in precision.packed_layers:
            count *= 2
        total += count
    return total


def _normalise(
    tensors: Mapping[str, TensorInfo], precision: Precision
) -> tuple[str, dict[str, tuple[int, ...] | None]]:
    """Strip the dominant known prefix; return logical shapes (packed NVFP4 weights doubled,
    bitsandbytes-packed weights unknown)."""
    counts: Counter[str] = Counter()
    for name in tensors:
        if name.startswith(DIT_PREFIXES):
            counts[next(p for p in DIT_PREFIXES if name.startswith(p))] += 1
        elif name.startswith("text_encoders."):
            te = _TE_PREFIX_RE.match(name)
            if te:
                counts[te.group(1)] += 1
    prefix = ""
    if counts:
        best, number = counts.most_common(1)[0]
        if number > 5 or number == len(tensors):
            prefix = best
    shapes: dict[str, tuple[int, ...] | None] = {}
    bnb_packed = (
        {
            n
            for n in tensors
            if f"{n}.absmax" in tensors
            or f"{n}.quant_state.bitsandbytes__nf4" in tensors
            or f"{n}.quant_state.bitsandbytes__fp4" in tensors
        }
        if precision.quantization == "bnb-4bit"
        else set()
    )
    for name, info in tensors.items():
        if prefix and not name.startswith(prefix):
            continue
        key = name[len(prefix) :]
        shape: tuple[int, ...] | None = info.shape
        if (
            name.endswith(".weight")
            and name[: -len(".weight")] in precision.packed_layers
            and shape
        ):
            shape = (*shape[:-1], shape[-1] * 2)
        if name in bnb_packed:
            shape = None
        shapes[key] = shape
    return prefix, shapes


def _match_component(shapes: Mapping[str, tuple[int, ...] | None]) -> Component | None:
    for component in COMPONENTS:
        if _matches(component.match, shapes):
            return component
    return None


def _matches(rule: Match, shapes: Mapping[str, tuple[int, ...] | None]) -> bool:
    if not _has_all(rule.has, shapes):
        return False
    if any(key in shapes for key in rule.lacks):
        return False
    return not rule.any_of or any(_has_all(alt, shapes) for alt in rule.any_of)


def _has_all(
    wanted: Mapping[str, tuple[int | None, ...] | None],
    shapes: Mapping[str, tuple[int, ...] | None],
) -> bool:
    for key, pattern in wanted.items():
        if key not in shapes:
            return False
        actual = shapes[key]
        if pattern is None or actual is None:
            continue
        if len(pattern) != len(actual) or any(
            p is not None and p != a for p, a in zip(pattern, actual, strict=True)
        ):
            return False
    return True


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value
