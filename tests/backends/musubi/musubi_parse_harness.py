"""Check golden argv and dataset TOMLs against a real Musubi Tuner checkout.

Run as a script (``python musubi_parse_harness.py <musubi src dir> <golden dir>``); it
prints one JSON object mapping ``case:step`` (and ``case:dataset.toml``) to ``"ok"`` or
the error. Musubi's heavy dependencies (torch, transformers …) are replaced by inert
import placeholders so that only the argument parsers and the dataset-config schema run:
the check proves flag names, choices and types, not training behaviour. ``voluptuous``
and ``toml`` must be importable for the TOML check (``KURA_MUSUBI_DEPS`` may name a
folder that holds them).
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import io
import json
import os
import pathlib
import runpy
import sys
import types
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

_PLACEHOLDER_PACKAGES = frozenset(
    {
        "torch",
        "torchvision",
        "accelerate",
        "transformers",
        "diffusers",
        "safetensors",
        "bitsandbytes",
        "cv2",
        "av",
        "PIL",
        "einops",
        "numpy",
        "huggingface_hub",
        "tqdm",
        "sentencepiece",
        "ftfy",
        "easydict",
        "tokenizers",
        "scipy",
        "packaging",
        "requests",
        "regex",
        "sensecraft",
        "timm",
        "imageio",
        "yaml",
        "matplotlib",
        "ascii_magic",
        "psutil",
        "lycoris",
        "xformers",
        "flash_attn",
        "sageattention",
        "triton",
        "prompt_toolkit",
        "gradio",
        "qwen_vl_utils",
        "torchao",
        "kornia",
        "omegaconf",
        "jinja2",
        "tensorboard",
    }
)


class _InertMeta(type):
    """Class-level behaviour of an inert placeholder: any attribute is another one."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _inert(name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return super().__call__()

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __or__

    def __add__(cls, other: Any) -> Any:
        return other if isinstance(other, str) else cls

    __radd__ = __add__

    def __iter__(cls) -> Any:
        return iter(())

    def __mro_entries__(cls, bases: Any) -> tuple[type, ...]:
        return (cls,)


class _Inert(metaclass=_InertMeta):
    """Instance-level behaviour: falsy, zero-like, absorbs calls and arithmetic."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _inert(name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return _inert("call")()

    def __getitem__(self, key: Any) -> Any:
        return _inert("item")()

    def __iter__(self) -> Any:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __lt__(self, other: Any) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __or__(self, other: Any) -> Any:
        return self

    __ror__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __truediv__ = __rtruediv__ = __or__

    def __add__(self, other: Any) -> Any:
        return other if isinstance(other, str) else self

    __radd__ = __add__

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *args: Any) -> bool:
        return False

    def __str__(self) -> str:
        return "0.0"

    def __int__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __index__(self) -> int:
        return 0

    def __len__(self) -> int:
        return 0

    def __contains__(self, item: Any) -> bool:
        return False


def _inert(name: str) -> type:
    return _InertMeta(str(name), (_Inert,), {})


class _InertModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _inert(name)
        setattr(self, name, value)
        return value


class _PlaceholderFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves heavy third-party packages as inert modules; everything else is real."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] not in _PLACEHOLDER_PACKAGES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _InertModule(spec.name)
        module.__path__ = []
        module.__version__ = "2.7.1"
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _Parsed(Exception):
    pass


def _script_and_args(argv: list[str]) -> tuple[str, list[str]]:
    for index, element in enumerate(argv):
        if element.startswith("src/musubi_tuner/") and element.endswith(".py"):
            return element, argv[index + 1 :]
    raise ValueError(f"no Musubi script in {argv}")


def check(golden: pathlib.Path) -> dict[str, str]:
    original = argparse.ArgumentParser.parse_args

    def capture(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        raise _Parsed(original(self, args, namespace))

    argparse.ArgumentParser.parse_args = capture  # type: ignore[method-assign]
    results: dict[str, str] = {}
    for compiled in sorted(golden.glob("*/compiled.json")):
        data = json.loads(compiled.read_text(encoding="utf-8"))
        for step in data["steps"]:
            script, args = _script_and_args(step["argv"])
            key = f"{compiled.parent.name}:{step['name']}"
            sys.argv = [script, *args]
            sink = io.StringIO()
            try:
                with redirect_stdout(sink), redirect_stderr(sink):
                    runpy.run_module(
                        "musubi_tuner." + pathlib.Path(script).stem, run_name="__main__"
                    )
                results[key] = "parser never ran"
            except _Parsed:
                results[key] = "ok"
            except SystemExit:
                results[key] = sink.getvalue().strip().splitlines()[-1]
    argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]
    from musubi_tuner.dataset import config_utils

    for toml_path in sorted(golden.glob("*/dataset.toml")):
        key = f"{toml_path.parent.name}:dataset.toml"
        try:
            user = config_utils.load_user_config(str(toml_path))
            generator = config_utils.BlueprintGenerator(config_utils.ConfigSanitizer())
            blueprint = generator.generate(user, argparse.Namespace(), architecture="check")
            count = len(blueprint.dataset_group.datasets)
            results[key] = "ok" if count == len(user["datasets"]) else f"{count} datasets"
        except Exception as exc:  # the schema error is the result being reported
            results[key] = f"{type(exc).__name__}: {exc}"
    return results


def main() -> None:
    source, golden = sys.argv[1], sys.argv[2]
    extra = os.environ.get("KURA_MUSUBI_DEPS")
    if extra:
        sys.path.insert(0, extra)
    sys.path.insert(0, source)
    sys.meta_path.insert(0, _PlaceholderFinder())
    print(json.dumps(check(pathlib.Path(golden)), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
