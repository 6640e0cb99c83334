"""Load Kura's job files with AI-Toolkit's own loader and config classes; report every key
they do not read. Run as ``python aitk_harness.py AITK_SRC JOB.yaml …`` (a fresh process:
it stubs torch and records reads with a trace hook).

- ``toolkit/config.py::get_config`` reads the file (``${VAR}`` substitution, the float
  resolver, ``[name]`` replacement); oyaml is PyYAML with ordered dicts, so ``yaml`` stands
  in for it.
- The config classes (``toolkit/config_modules.py``) are built as
  ``jobs/process/BaseSDTrainProcess.py::__init__`` builds them (checked against its source
  text), each ``__init__``'s ``kwargs`` swapped for a dict that records every key read
  (``get``/``[]``/``in``/``pop``), then ``validate_configs`` runs.
- Process-level and job-level keys are checked against the literal keys the process and
  job classes read (``get_conf('…')`` / ``config['…']``), found in their source by AST.
- torch, torchaudio and torchao are stubbed: the config classes only name them.
"""

from __future__ import annotations

import ast
import ctypes
import json
import sys
import types
from pathlib import Path
from typing import Any

SRC = Path(sys.argv[1]).resolve()
JOBS = [Path(p) for p in sys.argv[2:]]


class _Anything:
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def __getattr__(self, name: str) -> Any:
        return _Anything()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Anything()

    def __getitem__(self, key: Any) -> Any:
        return _Anything()

    def __or__(self, other: Any) -> Any:
        return _Anything()

    def __ror__(self, other: Any) -> Any:
        return _Anything()

    def __iter__(self) -> Any:
        return iter(())

    def __bool__(self) -> bool:
        return False  # torch.cuda/mps "available": no

    def __mro_entries__(self, bases: Any) -> tuple[type, ...]:
        return (object,)


class _Stub(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()


def _stub(name: str) -> None:
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        mod = ".".join(parts[:i])
        if mod not in sys.modules:
            module = _Stub(mod)
            module.__path__ = []  # a package, so submodules import
            sys.modules[mod] = module


sys.path.insert(0, str(SRC))
import toolkit  # noqa: E402  (the real package; its heavy leaves are stubbed below)
import toolkit.audio  # noqa: E402,F401

for name in (
    "torch",
    "torchaudio",
    "torchao.quantization.quant_primitives",
    "toolkit.prompt_utils",
    "toolkit.audio.album_artwork",
):
    _stub(name)
import yaml  # noqa: E402

sys.modules["oyaml"] = yaml

from toolkit import config_modules as cm  # noqa: E402
from toolkit.config import get_config  # noqa: E402


class Recording(dict):  # type: ignore[type-arg]
    def __init__(self, data: dict[str, Any], sink: set[str]):
        super().__init__(data)
        self.sink = sink

    def get(self, key: Any, default: Any = None) -> Any:
        self.sink.add(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.sink.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.sink.add(key)  # type: ignore[arg-type]
        return super().__contains__(key)

    def pop(self, key: Any, *default: Any) -> Any:
        self.sink.add(key)
        return super().pop(key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self.sink.add(key)
        return super().setdefault(key, default)


CLASSES = (
    "NetworkConfig",
    "TrainConfig",
    "ModelConfig",
    "SaveConfig",
    "SampleConfig",
    "SampleItem",
    "LoggingConfig",
    "DatasetConfig",
)
READS: dict[str, set[str]] = {}
_CODES = {getattr(cm, name).__init__.__code__: name for name in CLASSES}
_locals_to_fast = getattr(ctypes.pythonapi, "PyFrame_LocalsToFast", None)


def _tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
    if event == "call" and frame.f_code in _CODES:
        name = _CODES[frame.f_code]
        sink = READS.setdefault(name, set())
        kwargs = frame.f_locals.get("kwargs")
        if isinstance(kwargs, dict) and not isinstance(kwargs, Recording):
            frame.f_locals["kwargs"] = Recording(kwargs, sink)
            if _locals_to_fast is not None:  # 3.11/3.12; 3.13's f_locals writes through
                _locals_to_fast(ctypes.py_object(frame), ctypes.c_int(0))
    return None


BUILD = (  # the lines of BaseSDTrainProcess.__init__ this harness reproduces, in order
    "self.network_config = NetworkConfig(**network_config)",
    "self.train_config = TrainConfig(**self.get_conf('train', {}))",
    "model_config['dtype'] = self.train_config.dtype",
    "self.model_config = ModelConfig(**model_config)",
    "self.save_config = SaveConfig(**self.get_conf('save', {}))",
    "self.sample_config = SampleConfig(**self.get_conf('sample', {}))",
    "self.logging_config = LoggingConfig(**self.get_conf('logging', {}))",
    "raw_datasets = preprocess_dataset_raw_config(raw_datasets)",
    "raw_dataset['cache_text_embeddings'] = True",
    "dataset = DatasetConfig(**raw_dataset)",
)


def _check_build_lines() -> list[str]:
    text = (SRC / "jobs/process/BaseSDTrainProcess.py").read_text()
    positions = [text.find(line) for line in BUILD]
    missing = [line for line, at in zip(BUILD, positions, strict=True) if at < 0]
    if not missing and positions != sorted(positions):
        missing = ["(the config classes are built in another order)"]
    return missing


def _literal_keys(path: Path, receivers: tuple[str, ...]) -> set[str]:
    """String keys a file reads with ``get_conf('k')`` or ``<receiver>['k']``/``.get('k')``."""
    keys: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.func, ast.Attribute)
            and (
                node.func.attr == "get_conf"
                or (node.func.attr == "get" and ast.unparse(node.func.value) in receivers)
            )
        ):
            keys.add(str(node.args[0].value).split(".")[0])
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and ast.unparse(node.value) in receivers
        ):
            keys.add(str(node.slice.value))
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and any(ast.unparse(c) in receivers for c in node.comparators)
        ):
            keys.add(str(node.left.value))
    return keys


PROCESS_FILES = (
    "jobs/process/BaseProcess.py",
    "jobs/process/BaseTrainProcess.py",
    "jobs/process/BaseSDTrainProcess.py",
    "extensions_built_in/sd_trainer/SDTrainer.py",
    "extensions_built_in/sd_trainer/DiffusionTrainer.py",
)


def _process_keys() -> set[str]:
    keys: set[str] = set()
    for name in PROCESS_FILES:
        keys |= _literal_keys(SRC / name, ("self.config", "config"))
    return keys | _literal_keys(SRC / "jobs/BaseJob.py", ("process",))


def _job_keys() -> tuple[set[str], set[str]]:
    top = _literal_keys(SRC / "jobs/BaseJob.py", ("config",))
    config = _literal_keys(SRC / "jobs/BaseJob.py", ("self.config",))
    config |= _literal_keys(SRC / "jobs/ExtensionJob.py", ("self.config",))
    config |= _literal_keys(SRC / "toolkit/config.py", ('config["config"]',))
    return top, config


def _trainer_types() -> set[str]:
    text = (SRC / "extensions_built_in/sd_trainer/__init__.py").read_text()
    return {
        str(n.value.value)
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.Assign)
        and any(ast.unparse(t) == "uid" for t in n.targets)
        and isinstance(n.value, ast.Constant)
    }


def _unread(data: dict[str, Any], reads: set[str], where: str) -> list[str]:
    return [f"{where}.{k}" for k in data if k not in reads]


def check(path: Path) -> dict[str, Any]:
    problems: list[str] = []
    job = get_config(str(path))
    top, config_keys = _job_keys()
    problems += [k for k in _unread(dict(job), top | {"job", "config"}, "") if k]
    problems += _unread(dict(job["config"]), config_keys, "config")
    processes = job["config"]["process"]
    if len(processes) != 1:
        problems.append(f"config.process has {len(processes)} entries")
    process = processes[0]
    if process["type"] not in _trainer_types():
        problems.append(f"process type {process['type']} is not an sd_trainer extension uid")
    problems += _unread(process, _process_keys(), "process")
    READS.clear()
    sys.settrace(_tracer)
    try:
        network = cm.NetworkConfig(**process["network"])
        train = cm.TrainConfig(**process.get("train", {}))
        model = dict(process.get("model", {}))
        model["dtype"] = train.dtype
        model_config = cm.ModelConfig(**model)
        save = cm.SaveConfig(**process.get("save", {}))
        sample = cm.SampleConfig(**process.get("sample", {}))
        cm.LoggingConfig(**process.get("logging", {}))
        raw = cm.preprocess_dataset_raw_config(process["datasets"])
        if train.cache_text_embeddings:
            for item in raw:
                item["cache_text_embeddings"] = True
        datasets = [cm.DatasetConfig(**item) for item in raw]
    finally:
        sys.settrace(None)
    cm.validate_configs(train, model_config, save, datasets)
    sections = {
        "network": "NetworkConfig",
        "train": "TrainConfig",
        "model": "ModelConfig",
        "save": "SaveConfig",
        "sample": "SampleConfig",
        "logging": "LoggingConfig",
    }
    for section, cls in sections.items():
        if section in process:
            problems += _unread(process[section], READS.get(cls, set()), f"process.{section}")
    for index, item in enumerate(process.get("sample", {}).get("samples", [])):
        problems += _unread(
            item, READS.get("SampleItem", set()), f"process.sample.samples[{index}]"
        )
    for index, item in enumerate(process["datasets"]):
        problems += _unread(item, READS.get("DatasetConfig", set()), f"process.datasets[{index}]")
    if not READS.get("TrainConfig"):
        problems.append("the read recorder saw no TrainConfig reads (instrumentation broken)")
    facts = {
        "arch": model_config.arch,
        "network_type": network.type,
        "steps": train.steps,
        "lr_is_float": isinstance(train.lr, float),
        "gradient_checkpointing": train.gradient_checkpointing,
        "qtype": getattr(model_config, "qtype", None),
        "accuracy_recovery_adapter": getattr(model_config, "accuracy_recovery_adapter", None),
        "optimizer_params": train.optimizer_params,
        "layer_offloading_percents": [
            getattr(model_config, "layer_offloading_transformer_percent", None),
            getattr(model_config, "layer_offloading_text_encoder_percent", None),
        ],
        "sample": {
            "guidance_scale": sample.guidance_scale,
            "sample_steps": sample.sample_steps,
            "neg": sample.neg,
            "prompts": [item.prompt for item in sample.samples],
            "ctrl_img": [item.ctrl_img for item in sample.samples],
        },
        "trigger_word": process.get("trigger_word"),
    }
    return {"file": path.name, "unread": problems, "facts": facts}


if __name__ == "__main__":
    import contextlib

    with contextlib.redirect_stdout(sys.stderr):  # the config classes print (SampleConfig)
        report = {"build_lines_missing": _check_build_lines(), "jobs": [check(p) for p in JOBS]}
    print(json.dumps(report, indent=2, default=str))
