"""Kura's helper inside the KohakuMoss environment: JSON in, JSON out.

Run by path with the environment's Python, never imported by Kura's own process::

    <env>/bin/python <this file> COMMAND < request.json > answer.json

It imports only the standard library at module level; every command imports KohakuMoss
(torch, diffusers, transformers …) inside itself, so Kura's CLI never loads them. Each
command calls KohakuMoss's own code and re-implements none of it:

``versions``      package versions, the bundle root, the preset layers, torch's devices
``layers``        the preset layer paths for a choice (``presets.layer``/``vram_layer``)
``problems``      ``config_problems`` of each config, split by ``blocking``, with its
                  composed knobs (``config_knobs``)
``defaults``      the train script's knob defaults as type names (for Kura's type check)
``infer``         ``infer_config`` of a DiT (file or pipeline root), headers only
``estimate``      ``estimate(workload(knobs), resolve(profile))`` per memory option
``inspect``       the ``inspect_data`` report (catalog and batch/token plan) of a data config
``facts``         what a compile needs, in one process: ``layers`` + ``defaults`` + ``infer``
                  + each VRAM layer's MEMORY_PROFILE/MAX_TOKENS + whether torch sees CUDA
``plan``          what a plan needs, in one process: ``estimate`` rows + the ``inspect``
                  report of the same config
``build-tiny``    a tiny random MOSS-shaped pipeline root (KohakuMoss's own builder and
                  the real encoder classes with tiny random weights)

The answer is one JSON object on stdout: ``{"ok": true, "result": …}`` or ``{"ok": false,
"error": "…", "kind": "…"}`` (exit 0 either way; a crash is a non-zero exit with a
traceback on stderr).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

# Running a file by path puts its folder first on sys.path: drop it, so that this
# package's module names can never shadow the environment's own.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

TRAIN = "scripts/train/moss.py"
TINY_ARCH: dict[str, Any] = {
    "dim": 64,
    "depth": 2,
    "heads": 2,
    "ffn_dim": 128,
    "text_dim": 32,
    "text_blocks": 1,
    "latent_channels": 128,
    "freq_dim": 32,
    "negative_skip_layers": [],
}
"""The tiny DiT shape (dim divisible by heads, head_dim by 2×rope_axes, 128 latent
channels for the FLUX.2 VAE's 32 channels patchified 2×2)."""


class HelperError(Exception):
    """A request the helper cannot answer; ``kind`` names the class of problem."""

    def __init__(self, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


def _version(name: str) -> str | None:
    import importlib.metadata as metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _root() -> Path:
    from kohakumoss.cli.config.validate import repo_root

    return Path(repo_root())


def cmd_versions(_: dict[str, Any]) -> dict[str, Any]:
    import torch
    from kohakumoss.cli.config import presets

    root = _root()
    return {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "packages": {
            name: _version(name)
            for name in (
                "kohakumoss",
                "kohaku-engine",
                "kohakuvault",
                "torch",
                "diffusers",
                "transformers",
                "lycoris-lora",
            )
        },
        "bundle_root": str(root),
        "catalogue": presets.catalogue(root),
        "cuda": bool(torch.cuda.is_available()),
        "cuda_devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
    }


def cmd_layers(req: dict[str, Any]) -> dict[str, Any]:
    """Paths of the train layers: base, algo, data, vram, precision (KohakuMoss's order)."""
    from kohakumoss.cli.config import presets
    from kohakumoss.cli.config.validate import BASES

    root = _root()
    algo = req["algo"]
    vram = req["vram"]
    try:
        vram_name = (
            req["vram_layer"]
            if req.get("vram_layer")
            else presets.vram_layer(root, vram, algo == presets.FULL)
        )
        picks = [
            ("algo", algo),
            ("data", req["source"]),
            ("vram", vram_name),
            ("precision", req["precision"]),
        ]
        paths = [str(root / BASES[TRAIN])]
        paths += [str(presets.layer(root, "moss", g, n)) for g, n in picks]
    except SystemExit as err:  # KohakuMoss's own refusal (a size below the smallest …)
        raise HelperError(str(err), "layers") from err
    return {
        "root": str(root),
        "script": str(root / TRAIN),
        "data_scripts": {
            name: str(root / "scripts" / "data" / f"{name}.py")
            for name in ("inspect_data", "cache_text", "cache_latents")
        },
        "vram_layer": vram_name,
        "layers": paths,
        "vram_layers": presets.names(root, "moss", "vram"),
    }


def cmd_problems(req: dict[str, Any]) -> dict[str, Any]:
    """``config_problems`` of each config, then, for a train config, the nested knobs
    KohakuMoss's checker passes unread (:func:`_nested_problems`), all blocking; and its
    knobs as KohakuMoss composes them (``config_knobs``: what the run trains with, for the
    plan's recipe)."""
    from kohakumoss.cli.config.validate import blocking, config_knobs, config_problems

    out: dict[str, Any] = {}
    for path in req["configs"]:
        nested = _nested_problems(Path(path))
        try:
            found = [str(p) for p in config_problems(Path(path))]
        except (TypeError, ValueError, KeyError, AttributeError) as err:
            # KohakuMoss's checker crashes on a value of the wrong type; say so plainly.
            found = [f"the checker raised {type(err).__name__}: {err}", *nested]
            out[path] = {"all": found, "blocking": found, "crashed": True, "knobs": None}
            continue
        try:
            knobs: Any = config_knobs(Path(path))[1]
        except (TypeError, ValueError, KeyError):
            knobs = None  # its problems above say why; the recipe read-back says none
        out[path] = {
            "all": [*found, *nested],
            "blocking": [*blocking(found), *nested],
            "crashed": False,
            "knobs": knobs,
        }
    return out


def _nested_problems(config: Path) -> list[str]:
    """What KohakuMoss's ``config_problems`` does not read but training builds: the
    ``SCHEDULE`` (AnySchedule, through KohakuMoss's ``schedule_config``), every ``CAPTION``
    template (its caption registry, rendered once) and the ``NUM_WORKERS``/``PREFETCH``
    the data loader gets (torch's ``DataLoader``). Each is built here by the code that
    builds it in the run, so a value that would stop the run after its caches is refused
    now. Only train configs (the data configs read the same knobs through them)."""
    from kohakumoss.cli.config.validate import config_knobs, target_script

    if not target_script(config).endswith(TRAIN):
        return []
    _, k = config_knobs(config)
    problems = _schedule_problems(k["SCHEDULE"], k["STEPS"])
    captions = [("CAPTION", k["CAPTION"])]
    for i, entry in enumerate(k["DATASETS"] if isinstance(k["DATASETS"], list) else []):
        if isinstance(entry, dict) and "caption" in entry:
            captions.append((f"DATASETS[{i}]['caption']", entry["caption"]))
    for name, caption in captions:
        problems += _caption_problems(name, caption)
    problems += _loader_problems(k["NUM_WORKERS"], k["PREFETCH"])
    return problems


def _schedule_problems(schedule: Any, steps: Any) -> list[str]:
    from anyschedule.base import registered_schedulers
    from anyschedule.utils import get_scheduler
    from kohakumoss.training.optim.schedule import schedule_config

    if not isinstance(schedule, dict):
        return [f"SCHEDULE={schedule!r} is not a mapping (an AnySchedule config)"]
    if not isinstance(steps, int) or isinstance(steps, bool) or steps <= 0:
        return []  # KohakuMoss's own check names STEPS
    try:
        subs = schedule_config(schedule, steps)
    except Exception as err:  # its own wiring of the knob refuses the shape
        return [f"SCHEDULE: KohakuMoss cannot read it ({type(err).__name__}: {err})"]
    problems = []
    for key, sub in subs.items():
        where = "SCHEDULE" if "mode" in schedule else f"SCHEDULE[{key!r}]"
        if not isinstance(sub, dict):
            problems.append(f"{where}={sub!r} is not a mapping (an AnySchedule config)")
            continue
        mode = sub.get("mode")
        if mode not in registered_schedulers:
            problems.append(
                f"{where}['mode']={mode!r} is not one of {sorted(registered_schedulers)} "
                "(AnySchedule's schedules)"
            )
            continue
        try:
            scheduler = get_scheduler(dict(sub))
            checked = sorted({0, 1, int(sub.get("warmup") or 0), steps // 2, steps - 1})
            values = [scheduler(step) for step in checked]
        except Exception as err:  # AnySchedule's own constructor or its first steps
            problems.append(f"{where}: AnySchedule refuses it ({type(err).__name__}: {err})")
            continue
        bad = [v for v in values if not isinstance(v, (int, float)) or v != v]
        if bad:
            problems.append(f"{where}: AnySchedule computes {bad[0]!r}, not a number")
    return problems


def _caption_problems(name: str, caption: Any) -> list[str]:
    import numpy as np
    from kohakumoss_data.caption.template import build_template
    from kohakumoss_data.types import CatalogRow

    row = CatalogRow(
        id=0,
        locator="kura-check.png",
        w=64,
        h=64,
        tags=["kura", "1girl", "smile"],
        caption_nl="kura, a girl smiling",
        artist="kura",
        rating="general",
        json={"subject": "kura"},
    )
    try:
        text = build_template(caption).render(row, np.random.default_rng(0))
    except Exception as err:  # its registry, the template's constructor, or its render
        return [f"{name}: KohakuMoss's caption template refuses it ({type(err).__name__}: {err})"]
    return [] if isinstance(text, str) else [f"{name}: the template renders {text!r}, not text"]


def _loader_problems(workers: Any, prefetch: Any) -> list[str]:
    from torch.utils.data import DataLoader

    try:
        if workers:
            DataLoader([], num_workers=workers, prefetch_factor=prefetch)
        else:
            DataLoader([], num_workers=workers)
    except Exception as err:  # torch's own check of the loader's arguments
        return [
            f"NUM_WORKERS={workers!r} / PREFETCH={prefetch!r}: torch's DataLoader refuses "
            f"them ({type(err).__name__}: {err})"
        ]
    return []


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "sequence"
    if isinstance(value, dict):
        return "mapping"
    if value is None:
        return "none"
    return "other"


def cmd_defaults(_: dict[str, Any]) -> dict[str, Any]:
    from kohakumoss.cli.config.validate import script_defaults

    defaults = script_defaults(_root(), TRAIN)
    return {name: _type_name(value) for name, value in sorted(defaults.items())}


def _arch_dict(cfg: Any) -> dict[str, Any]:
    import dataclasses

    out = dataclasses.asdict(cfg)
    out["negative_skip_layers"] = list(out["negative_skip_layers"])
    return out


def cmd_infer(req: dict[str, Any]) -> dict[str, Any]:
    from kohakumoss.model.io.keymap import strip_prefix
    from kohakumoss.model.io.load import _view, infer_config, read_config
    from kohakumoss.model.io.source import CheckpointSource
    from kohakumoss.types.arch import PRESETS

    path = Path(req["weights"])
    if not path.exists():
        raise HelperError(f"{path} does not exist", "missing")
    source = CheckpointSource(path)
    view = _view(source)
    try:
        cfg = infer_config(view, read_config(path))
    except KeyError as err:  # a key infer_config reads its shape from
        raise HelperError(
            f"{path}: KohakuMoss cannot read the DiT's shape from its header: it lacks {err}",
            "arch",
        ) from err
    named = [name for name, preset in PRESETS.items() if preset == cfg]
    return {
        "arch": _arch_dict(cfg),
        "named_variants": named,
        "prefix": strip_prefix(list(source.keys())),
        "problems": _load_problems(path, view, cfg),
    }


def _load_problems(path: Path, view: Any, cfg: Any) -> list[str]:
    """What KohakuMoss's own strict load (``load_state_into``) would refuse in this DiT,
    and its ``MossArchConfig.validate``, without reading a tensor: the shape it infers is
    built on the meta device and its keys and shapes compared with the header's (a
    pre-quantised file's stored keys and scales accounted as its loader does)."""
    from kohakumoss.model.backbone import MossBackbone
    from kohakumoss.model.io.keymap import DERIVED
    from kohakumoss.quant.stored import read_record, stored_keys

    head = view.shape("layers.0.q_norm.weight")[0]
    if head <= 0 or cfg.dim % head:
        return [
            f"the head size {head} (layers.0.q_norm.weight) does not divide the width "
            f"{cfg.dim}: KohakuMoss's infer_config builds {cfg.heads} head(s) and would load "
            f"the {head}-wide norms into them"
        ]
    try:
        cfg.validate()
    except ValueError as err:
        return [f"MossArchConfig.validate refuses the shape read from the header: {err}"]
    expected = MossBackbone(cfg, device="meta").state_dict()
    record = read_record(path)
    stored, extra = stored_keys(record) if record else (set(), set())
    have = set(view.keys())
    missing = [k for k in expected if k not in have and k not in DERIVED]
    unexpected = sorted(k for k in have if k not in expected and k not in extra)
    reshaped = [
        f"{k} is {list(view.shape(k))}, KohakuMoss builds {list(expected[k].shape)}"
        for k in expected
        if k in have and k not in stored and tuple(view.shape(k)) != tuple(expected[k].shape)
    ]
    problems = []
    if missing:
        problems.append(f"missing {missing[:8]} ({len(missing)} in all)")
    if unexpected:
        problems.append(f"unexpected {unexpected[:8]} ({len(unexpected)} in all)")
    return problems + reshaped[:8]


def cmd_estimate(req: dict[str, Any]) -> dict[str, Any]:
    """Peak device bytes per option: each option overrides MEMORY_PROFILE / MAX_TOKENS
    (or names a VRAM layer whose knobs apply) over the compiled config's knobs."""
    import dataclasses

    import torch
    from kohakumoss.cli.config.validate import config_knobs, load_knobs
    from kohakumoss.memory.catalog_table import lora_params
    from kohakumoss.memory.estimate import GIB, estimate
    from kohakumoss.memory.profiles import resolve
    from kohakumoss.precision import DTYPES
    from kohakumoss.training.build.model import workload
    from kohakumoss.training.knobs import is_full, memory_overrides

    _, base = config_knobs(Path(req["config"]))
    rows = []
    for option in req["options"]:
        k = dict(base)
        if option.get("layer"):
            k.update(load_knobs(Path(option["layer"])))
        k.update(option.get("knobs", {}))
        compute = DTYPES.get(k["PRECISION"], torch.bfloat16)
        work = workload(k, compute)
        if not is_full(k):
            work = dataclasses.replace(work, trainable_params=lora_params(work.arch, int(k["DIM"])))
        if k["MEMORY_PROFILE"] == "auto":
            rows.append({"name": option["name"], "error": "MEMORY_PROFILE='auto'"})
            continue
        try:
            plan = resolve(
                k["MEMORY_PROFILE"],
                memory_overrides(k),
                device="cpu",
                trainable_base=is_full(k),
            )
        except ValueError as err:
            rows.append({"name": option["name"], "error": str(err)})
            continue
        est = estimate(work, plan)
        rows.append(
            {
                "name": option["name"],
                "profile": k["MEMORY_PROFILE"],
                "max_tokens": int(k["MAX_TOKENS"]),
                "img_tokens": work.img_tokens,
                "txt_tokens": work.txt_tokens,
                "trainable_params": work.trainable_params,
                "total_gib": est.total / GIB,
                "parts_gib": {name: v / GIB for name, v in est.parts.items()},
            }
        )
    return {"rows": rows}


def cmd_inspect(req: dict[str, Any]) -> dict[str, Any]:
    from kohakumoss.cli.config.validate import config_knobs
    from kohakumoss_data.dataset import MossDataset
    from kohakumoss_data.scripting import data_config
    from kohakumoss_data.stats import catalog_stats, plan_stats

    _, k = config_knobs(Path(req["config"]))
    cfg = data_config(k, latent_cache="off", text_cache="off")
    dataset = MossDataset(cfg)
    budget = None if cfg.batching == "count" else cfg.max_tokens
    return {
        "catalog": catalog_stats(dataset.catalog),
        "plan": plan_stats(dataset, 0, budget),
        "captions": [dataset.caption(i, 0) for i in range(min(3, len(dataset.catalog)))],
    }


def cmd_facts(req: dict[str, Any]) -> dict[str, Any]:
    import torch
    from kohakumoss.cli.config.validate import load_knobs

    layers = cmd_layers(req)
    root = Path(layers["root"])
    vram: dict[str, Any] = {}
    for name in layers["vram_layers"]:
        knobs = load_knobs(root / "configs" / "moss" / "vram" / f"vram_{name}.py")
        vram[name] = {k: knobs.get(k) for k in ("MEMORY_PROFILE", "MAX_TOKENS")}
    return {
        "layers": layers,
        "defaults": cmd_defaults({}),
        "infer": cmd_infer({"weights": req["weights"]}),
        "vram": vram,
        "cuda": bool(torch.cuda.is_available()),
    }


def cmd_plan(req: dict[str, Any]) -> dict[str, Any]:
    rows = cmd_estimate(req)["rows"]
    try:
        inspect: dict[str, Any] = cmd_inspect({"config": req["config"]})
    except Exception as err:  # the data plan is shown when it can be made; say why not
        inspect = {"error": f"{type(err).__name__}: {err}"}
    return {"rows": rows, "inspect": inspect}


def _tiny_tokenizer(out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"])
    template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
        "{% if not enable_thinking %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=template,
    )
    fast.save_pretrained(str(out))


def cmd_build_tiny(req: dict[str, Any]) -> dict[str, Any]:
    """A pipeline root: transformer/ (KohakuMoss's build_backbone + save_diffusers),
    text_encoder/ (a 4-layer Qwen3.5 text model), tokenizer/ (byte-level BPE with the
    Qwen chat template), vae/ (AutoencoderKLFlux2, 32 latent channels); all random."""
    from diffusers import AutoencoderKLFlux2
    from kohakumoss.model import build_backbone, save_diffusers, save_single
    from kohakumoss.types.arch import MossArchConfig
    from transformers import Qwen3_5TextConfig, Qwen3_5TextModel

    out = Path(req["out"])
    out.mkdir(parents=True, exist_ok=True)
    arch: dict[str, Any] = dict(TINY_ARCH)
    arch["negative_skip_layers"] = tuple(arch["negative_skip_layers"])
    cfg = MossArchConfig(**arch)
    model = build_backbone(cfg, device="cpu", init=True, seed=int(req.get("seed", 0)))
    save_diffusers(model, out / "transformer")
    if req.get("single_file"):
        save_single(model, out / "moss-tiny-dit.safetensors", fused_qkv=bool(req.get("fused")))
    AutoencoderKLFlux2(
        block_out_channels=(16, 16, 16, 16),
        layers_per_block=1,
        norm_num_groups=8,
        latent_channels=32,
        mid_block_add_attention=False,
    ).save_pretrained(str(out / "vae"))
    text = Qwen3_5TextConfig(
        vocab_size=320,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=4,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        linear_num_key_heads=2,
        linear_num_value_heads=2,
        linear_key_head_dim=16,
        linear_value_head_dim=16,
    )
    Qwen3_5TextModel(text).save_pretrained(str(out / "text_encoder"))
    _tiny_tokenizer(out / "tokenizer")
    return {"root": str(out), "arch": TINY_ARCH}


COMMANDS = {
    "versions": cmd_versions,
    "layers": cmd_layers,
    "problems": cmd_problems,
    "defaults": cmd_defaults,
    "infer": cmd_infer,
    "estimate": cmd_estimate,
    "inspect": cmd_inspect,
    "facts": cmd_facts,
    "plan": cmd_plan,
    "build-tiny": cmd_build_tiny,
}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in COMMANDS:
        print(f"usage: envhelper.py {{{'|'.join(COMMANDS)}}} < request.json", file=sys.stderr)
        return 2
    raw = sys.stdin.read()
    request = json.loads(raw) if raw.strip() else {}
    os.environ.setdefault("NO_COLOR", "1")
    out = sys.stdout
    sys.stdout = sys.stderr  # KohakuMoss's console logging must not mix with the answer
    try:
        result = COMMANDS[argv[0]](request)
    except HelperError as err:
        answer: dict[str, Any] = {"ok": False, "error": str(err), "kind": err.kind}
    except Exception as err:
        traceback.print_exc(file=sys.stderr)
        answer = {"ok": False, "error": f"{type(err).__name__}: {err}", "kind": "crash"}
    else:
        answer = {"ok": True, "result": result}
    finally:
        sys.stdout = out
    out.write(json.dumps(answer, default=str))
    out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
