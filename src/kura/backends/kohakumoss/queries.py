"""Typed questions to KohakuMoss, answered by its own code through ``envhelper.py``.

Each function sends one request to the environment and turns the JSON answer into frozen
values, so nothing above this module handles raw JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from kura.backends.kohakumoss.env import EnvLocation, call_helper
from kura.backends.kohakumoss.knobs import KnobValue
from kura.errors import KuraError

__all__ = [
    "CompileFacts",
    "ConfigProblems",
    "DataPlan",
    "EnvReport",
    "LayerChoice",
    "LayerStack",
    "MemoryEstimate",
    "MemoryOption",
    "MossArch",
    "PlanAnswer",
    "VramLayer",
    "build_tiny",
    "compile_facts",
    "config_problems",
    "data_plan",
    "env_report",
    "estimate",
    "infer_arch",
    "knob_types",
    "layer_stack",
    "plan_answer",
]


def _obj(value: object, what: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise KuraError(f"the KohakuMoss helper answered {what} with {type(value).__name__}")
    return value


def _s(d: Mapping[str, object], key: str) -> str:
    value = d.get(key)
    if not isinstance(value, str):
        raise KuraError(f"the KohakuMoss helper's answer lacks the string {key!r}")
    return value


def _n(d: Mapping[str, object], key: str) -> float:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise KuraError(f"the KohakuMoss helper's answer lacks the number {key!r}")
    return float(value)


def _i(d: Mapping[str, object], key: str) -> int:
    return int(_n(d, key))


def _strs(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value)


@dataclass(frozen=True)
class EnvReport:
    """What the environment holds (``versions``)."""

    python: str
    executable: str
    packages: Mapping[str, str | None]
    bundle_root: Path
    layers: Mapping[str, tuple[str, ...]]
    cuda: bool
    cuda_devices: tuple[str, ...]


def env_report(env: EnvLocation) -> EnvReport:
    d = _obj(call_helper(env, "versions", timeout=180), "versions")
    packages = _obj(d.get("packages"), "packages")
    moss = _obj(_obj(d.get("catalogue"), "catalogue").get("moss"), "catalogue")
    return EnvReport(
        python=_s(d, "python"),
        executable=_s(d, "executable"),
        packages=MappingProxyType(
            {k: (str(v) if v is not None else None) for k, v in packages.items()}
        ),
        bundle_root=Path(_s(d, "bundle_root")),
        layers=MappingProxyType({k: _strs(v) for k, v in moss.items()}),
        cuda=bool(d.get("cuda")),
        cuda_devices=_strs(d.get("cuda_devices")),
    )


@dataclass(frozen=True)
class LayerChoice:
    """One layer per axis (KohakuMoss's layer names) or the card size it picks from."""

    algo: str = "lora"
    source: str = "kohya"
    precision: str = "bf16"
    vram_gib: float | None = 24.0
    vram_layer: str | None = None


@dataclass(frozen=True)
class LayerStack:
    """The installed preset stack for a choice, resolved from the package at compile time."""

    root: Path
    train_script: Path
    data_scripts: Mapping[str, Path]
    vram_layer: str
    layers: tuple[Path, ...]
    vram_layers: tuple[str, ...]


def layer_stack(env: EnvLocation, choice: LayerChoice) -> LayerStack:
    request = _layer_request(choice)
    return _stack(_obj(call_helper(env, "layers", request, timeout=180), "layers"))


def _layer_request(choice: LayerChoice) -> dict[str, object]:
    return {
        "algo": choice.algo,
        "source": choice.source,
        "precision": choice.precision,
        "vram": choice.vram_gib if choice.vram_gib is not None else "auto",
        "vram_layer": choice.vram_layer or "",
    }


def _stack(d: Mapping[str, object]) -> LayerStack:
    scripts = _obj(d.get("data_scripts"), "data_scripts")
    return LayerStack(
        root=Path(_s(d, "root")),
        train_script=Path(_s(d, "script")),
        data_scripts=MappingProxyType({k: Path(str(v)) for k, v in scripts.items()}),
        vram_layer=_s(d, "vram_layer"),
        layers=tuple(Path(p) for p in _strs(d.get("layers"))),
        vram_layers=_strs(d.get("vram_layers")),
    )


@dataclass(frozen=True)
class ConfigProblems:
    """``config_problems`` of one config; ``blocking`` drops the missing-path ones."""

    path: Path
    problems: tuple[str, ...]
    blocking: tuple[str, ...]
    crashed: bool
    knobs: Mapping[str, object] | None = None
    """The config's knobs as KohakuMoss composes them (None when its checker crashed)."""


_CHECKED: dict[str, tuple[ConfigProblems, ...]] = {}
"""Answers within one Kura process, by the configs' paths and texts (compile checks the
files, then the plan reads their composed knobs; a second GPU class's plan checks the same
files again)."""


def config_problems(env: EnvLocation, configs: Sequence[Path]) -> tuple[ConfigProblems, ...]:
    import hashlib
    import json

    key = json.dumps(
        [str(env.path)] + [[str(p), hashlib.sha256(p.read_bytes()).hexdigest()] for p in configs]
    )
    if key in _CHECKED:
        return _CHECKED[key]
    request = {"configs": [str(p) for p in configs]}
    d = _obj(call_helper(env, "problems", request, timeout=300), "problems")
    out = []
    for path in configs:
        entry = _obj(d.get(str(path)), f"problems of {path}")
        knobs = entry.get("knobs")
        out.append(
            ConfigProblems(
                path=path,
                problems=_strs(entry.get("all")),
                blocking=_strs(entry.get("blocking")),
                crashed=bool(entry.get("crashed")),
                knobs=MappingProxyType(dict(knobs)) if isinstance(knobs, dict) else None,
            )
        )
    _CHECKED[key] = tuple(out)
    return _CHECKED[key]


def knob_types(env: EnvLocation) -> Mapping[str, str]:
    """Every train knob's name → the type name of its default in ``scripts/train/moss.py``
    (``bool``, ``int``, ``float``, ``str``, ``sequence``, ``mapping``, ``none``, ``other``)."""
    d = _obj(call_helper(env, "defaults", timeout=180), "defaults")
    return MappingProxyType({k: str(v) for k, v in d.items()})


@dataclass(frozen=True)
class MossArch:
    """A MOSS DiT's shape as KohakuMoss's ``infer_config`` reads it from the headers."""

    dim: int
    depth: int
    heads: int
    ffn_dim: int
    text_dim: int
    text_blocks: int
    latent_channels: int
    freq_dim: int
    negative_skip_layers: tuple[int, ...]
    named_variants: tuple[str, ...] = ()
    prefix: str = ""
    problems: tuple[str, ...] = ()
    """What KohakuMoss's strict load of the file would refuse (its own key accounting)."""

    @property
    def is_named(self) -> bool:
        """True when the shape is one of KohakuMoss's presets (``base``/``sft``)."""
        return bool(self.named_variants)

    def overrides(self) -> dict[str, int | list[int]]:
        """The ``ARCH_OVERRIDES`` knob that builds this shape."""
        return {
            "dim": self.dim,
            "depth": self.depth,
            "heads": self.heads,
            "ffn_dim": self.ffn_dim,
            "text_dim": self.text_dim,
            "text_blocks": self.text_blocks,
            "latent_channels": self.latent_channels,
            "freq_dim": self.freq_dim,
            "negative_skip_layers": list(self.negative_skip_layers),
        }


def infer_arch(env: EnvLocation, weights: Path) -> MossArch:
    return _arch(_obj(call_helper(env, "infer", {"weights": str(weights)}, timeout=180), "infer"))


def _arch(d: Mapping[str, object]) -> MossArch:
    arch = _obj(d.get("arch"), "arch")
    skip = arch.get("negative_skip_layers")
    return MossArch(
        dim=_i(arch, "dim"),
        depth=_i(arch, "depth"),
        heads=_i(arch, "heads"),
        ffn_dim=_i(arch, "ffn_dim"),
        text_dim=_i(arch, "text_dim"),
        text_blocks=_i(arch, "text_blocks"),
        latent_channels=_i(arch, "latent_channels"),
        freq_dim=_i(arch, "freq_dim"),
        negative_skip_layers=tuple(int(str(v)) for v in skip) if isinstance(skip, list) else (),
        named_variants=_strs(d.get("named_variants")),
        prefix=str(d.get("prefix") or ""),
        problems=_strs(d.get("problems")),
    )


@dataclass(frozen=True)
class MemoryOption:
    """One memory setting to estimate: a VRAM layer's knobs, then explicit knobs."""

    name: str
    layer: Path | None = None
    knobs: Mapping[str, KnobValue] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryEstimate:
    """KohakuMoss's ``estimate`` of one option: peak device GiB per step and its parts."""

    name: str
    profile: str
    max_tokens: int
    img_tokens: int
    txt_tokens: int
    trainable_params: int
    total_gib: float
    parts_gib: Mapping[str, float]
    error: str | None = None


def estimate(
    env: EnvLocation, config: Path, options: Sequence[MemoryOption]
) -> tuple[MemoryEstimate, ...]:
    request = _estimate_request(config, options)
    return _rows(_obj(call_helper(env, "estimate", request, timeout=300), "estimate"))


def _estimate_request(config: Path, options: Sequence[MemoryOption]) -> dict[str, object]:
    return {
        "config": str(config),
        "options": [
            {"name": o.name, "layer": str(o.layer) if o.layer else "", "knobs": dict(o.knobs)}
            for o in options
        ],
    }


def _rows(d: Mapping[str, object]) -> tuple[MemoryEstimate, ...]:
    rows = d.get("rows")
    out = []
    for raw in rows if isinstance(rows, list) else []:
        row = _obj(raw, "an estimate row")
        if row.get("error"):
            out.append(
                MemoryEstimate(
                    name=_s(row, "name"),
                    profile="",
                    max_tokens=0,
                    img_tokens=0,
                    txt_tokens=0,
                    trainable_params=0,
                    total_gib=float("nan"),
                    parts_gib={},
                    error=str(row["error"]),
                )
            )
            continue
        parts = _obj(row.get("parts_gib"), "parts")
        out.append(
            MemoryEstimate(
                name=_s(row, "name"),
                profile=_s(row, "profile"),
                max_tokens=_i(row, "max_tokens"),
                img_tokens=_i(row, "img_tokens"),
                txt_tokens=_i(row, "txt_tokens"),
                trainable_params=_i(row, "trainable_params"),
                total_gib=_n(row, "total_gib"),
                parts_gib=MappingProxyType({k: float(str(v)) for k, v in parts.items()}),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class DataPlan:
    """KohakuMoss's ``inspect_data`` report: its catalog and its own batch/token plan."""

    rows: int
    epoch_items: float
    batches: int
    samples_per_batch: float
    image_tokens_per_batch: float
    text_tokens_per_batch: float
    budget_fill: float
    padding_waste: float
    overlong_dropped: int
    top_sizes: tuple[tuple[str, int], ...]
    captions: tuple[str, ...]


def data_plan(env: EnvLocation, data_config: Path) -> DataPlan:
    return _data(
        _obj(call_helper(env, "inspect", {"config": str(data_config)}, timeout=600), "inspect")
    )


def _data(d: Mapping[str, object]) -> DataPlan:
    catalog = _obj(d.get("catalog"), "catalog")
    plan = _obj(d.get("plan"), "plan")
    sizes = plan.get("top_sizes")
    top = tuple(
        (str(item[0]), int(item[1]))
        for item in (sizes if isinstance(sizes, list) else [])
        if isinstance(item, list) and len(item) == 2
    )
    return DataPlan(
        rows=_i(catalog, "rows"),
        epoch_items=_n(catalog, "epoch_items"),
        batches=_i(plan, "batches"),
        samples_per_batch=_n(plan, "samples_per_batch"),
        image_tokens_per_batch=_n(plan, "image_tokens_per_batch"),
        text_tokens_per_batch=_n(plan, "text_tokens_per_batch"),
        budget_fill=_n(plan, "budget_fill"),
        padding_waste=_n(plan, "padding_waste"),
        overlong_dropped=_i(plan, "overlong_dropped"),
        top_sizes=top,
        captions=_strs(d.get("captions")),
    )


@dataclass(frozen=True)
class VramLayer:
    """One installed VRAM layer's memory knobs (KohakuMoss's own values)."""

    name: str
    profile: str | None
    max_tokens: int | None


@dataclass(frozen=True)
class CompileFacts:
    """Everything a compile asks the environment, answered in one helper process."""

    stack: LayerStack
    knob_types: Mapping[str, str]
    arch: MossArch
    vram: Mapping[str, VramLayer]
    cuda: bool


def compile_facts(env: EnvLocation, choice: LayerChoice, weights: Path) -> CompileFacts:
    request = {**_layer_request(choice), "weights": str(weights)}
    d = _obj(call_helper(env, "facts", request, timeout=300), "facts")
    vram = {}
    for name, raw in _obj(d.get("vram"), "vram").items():
        layer = _obj(raw, "a vram layer")
        profile, tokens = layer.get("MEMORY_PROFILE"), layer.get("MAX_TOKENS")
        vram[name] = VramLayer(
            name,
            str(profile) if profile is not None else None,
            int(tokens) if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
        )
    return CompileFacts(
        stack=_stack(_obj(d.get("layers"), "layers")),
        knob_types=MappingProxyType(
            {k: str(v) for k, v in _obj(d.get("defaults"), "defaults").items()}
        ),
        arch=_arch(_obj(d.get("infer"), "infer")),
        vram=MappingProxyType(vram),
        cuda=bool(d.get("cuda")),
    )


@dataclass(frozen=True)
class PlanAnswer:
    """The estimator's rows and KohakuMoss's own data plan of one config."""

    rows: tuple[MemoryEstimate, ...]
    data: DataPlan | None
    data_error: str | None


def plan_answer(env: EnvLocation, config: Path, options: Sequence[MemoryOption]) -> PlanAnswer:
    d = _obj(call_helper(env, "plan", _estimate_request(config, options), timeout=600), "plan")
    inspect = _obj(d.get("inspect"), "inspect")
    error = inspect.get("error")
    return PlanAnswer(
        rows=_rows(d),
        data=None if error else _data(inspect),
        data_error=str(error) if error else None,
    )


def build_tiny(
    env: EnvLocation, out: Path, *, single_file: bool = False, fused: bool = False
) -> Path:
    """A tiny random MOSS-shaped pipeline root at ``out`` (KohakuMoss's own builder)."""
    request = {"out": str(out), "single_file": single_file, "fused": fused}
    d = _obj(call_helper(env, "build-tiny", request, timeout=300), "build-tiny")
    return Path(_s(d, "root"))
