"""`kura estimate` is the backend's own estimate of a what-if: every step's cost with its
source, the worst step's verdict, `--set` keys checked against the keys the backend reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_every_step_is_costed_with_its_source_and_the_worst_decides(kura) -> None:
    result = kura("estimate", "--base", "zimage-base", "--gpu", "rtx-4090", "--json")
    assert result.exit_code == 0, result.stderr
    doc = result.json()
    assert doc["kind"] == "run-estimate" and doc["backend"] == "musubi-tuner"
    steps = {s["step"]: s for s in doc["steps"]}
    assert set(steps) == {"cache_latents", "cache_text_encoder", "train"}
    assert all(s["source"] for s in steps.values())
    assert steps["train"]["fits"] is False  # 1024² Z-Image with no aid is over 22.8 GiB
    assert doc["verdict"] == {"fits": False, "worst_step": "train", "unsized": []}


def test_backend_settings_go_through_set_and_change_the_estimate(kura) -> None:
    def train_peak(*sets: str) -> float:
        argv = ["estimate", "--base", "zimage-base", "--gpu", "rtx-4090", "--step", "train"]
        for value in sets:
            argv += ["--set", value]
        result = kura(*argv, "--json")
        assert result.exit_code == 0, result.stdout
        [step] = result.json()["steps"]
        assert step["step"] == "train"
        return float(step["peak_gib"])

    bare = train_peak()
    aided = train_peak(
        "backend.config.gradient_checkpointing=true", "backend.config.blocks_to_swap=8"
    )
    assert aided < bare


def test_one_step_is_shown_with_its_own_verdict(kura) -> None:
    result = kura(
        "estimate", "--base", "zimage-base", "--gpu", "rtx-4090", "--step", "cache_latents"
    )
    assert result.exit_code == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["cache_latents"]
    doc = kura(
        "estimate",
        "--base",
        "zimage-base",
        "--gpu",
        "rtx-4090",
        "--step",
        "cache_latents",
        "--json",
    ).json()
    assert [s["step"] for s in doc["steps"]] == ["cache_latents"]
    assert doc["verdict"]["fits"] is True


def test_an_unknown_step_names_the_steps(kura) -> None:
    result = kura("estimate", "--base", "zimage-base", "--step", "nope", "--json")
    assert result.exit_code != 0
    error = result.json()["error"]
    assert "nope" in error["message"]
    assert "cache_latents, cache_text_encoder, train" in error["hint"]


def test_an_unknown_backend_key_names_the_valid_ones(kura) -> None:
    result = kura("estimate", "--base", "zimage-base", "--set", "backend.config.swap=4", "--json")
    assert result.exit_code != 0
    error = result.json()["error"]
    assert "swap" in error["message"] and "musubi-tuner" in error["message"]
    assert "blocks_to_swap" in error["hint"]


def test_the_old_musubi_flags_are_gone_from_the_command(kura) -> None:
    assert kura("estimate", "--base", "zimage-base", "--swap", "4").exit_code != 0


def test_ai_toolkit_sizes_every_step_of_the_what_if(kura) -> None:
    argv = ["estimate", "--base", "aitk-zimage-base", "--gpu", "l40s"]
    result = kura(*argv, "--set", "backend.config.gradient_checkpointing=true", "--json")
    assert result.exit_code == 0, result.stdout
    doc = result.json()
    assert doc["backend"] == "ai-toolkit"
    assert doc["verdict"] == {
        "fits": True,
        "worst_step": doc["verdict"]["worst_step"],
        "unsized": [],
    }
    for step in doc["steps"]:
        assert step["peak_gib"] and step["upper_gib"] and step["fits"] is True
    train = next(s for s in doc["steps"] if s["kind"] == "train")
    assert train["seconds"] and train["seconds_band"]
    # Without checkpointing a 1024-px Z-Image step keeps every block's activations.
    plain = kura(*argv, "--json").json()
    assert plain["verdict"]["fits"] is False


def _without_chromas_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every shipped AI-Toolkit bundle has a shape: drop Chroma's to stand for one without."""
    from kura.backends.aitoolkit.estimator import estimate

    shapes = {k: v for k, v in estimate.SHAPE_FOR_BUNDLE.items() if k != "chroma1-base"}
    monkeypatch.setattr(estimate, "SHAPE_FOR_BUNDLE", shapes)


def test_ai_toolkit_says_which_step_it_cannot_size(kura, monkeypatch: pytest.MonkeyPatch) -> None:
    _without_chromas_shape(monkeypatch)
    result = kura("estimate", "--base", "chroma1-base", "--gpu", "l40s", "--json")
    assert result.exit_code == 0, result.stdout
    doc = result.json()
    train = next(s for s in doc["steps"] if s["kind"] == "train")
    assert train["fits"] is None and train["peak_gib"] is None
    assert doc["verdict"]["fits"] is None and doc["verdict"]["unsized"] == [train["step"]]
    human = kura("estimate", "--base", "chroma1-base", "--gpu", "l40s")
    assert "cannot size train" in human.stdout


def test_a_musubi_bundle_is_refused_by_ai_toolkit_naming_its_own(kura) -> None:
    result = kura("estimate", "--base", "zimage-base", "--backend", "ai-toolkit", "--json")
    assert result.exit_code != 0
    assert "not an AI-Toolkit bundle" in result.json()["error"]["message"]


def test_kohakumoss_what_if_times_the_step_and_says_memory_needs_a_run(kura) -> None:
    doc = kura("estimate", "--base", "moss-image-base", "--gpu", "rtx-4090", "--json").json()
    [train] = doc["steps"]
    assert train["seconds"] > 0 and train["seconds_band"]
    assert train["peak_gib"] is None and train["fits"] is None
    assert doc["verdict"]["unsized"] == ["train"]
    assert any("kura run estimate" in note for note in train["notes"])
    faster = kura("estimate", "--base", "moss-image-base", "--gpu", "h100-sxm", "--json").json()
    assert faster["steps"][0]["seconds"] < train["seconds"]


def test_the_toy_backend_estimates_through_the_same_verb(
    kura, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KURA_BACKEND_MODULES", "toy-trainer=tests.backends.toy.backend")
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    argv = ["estimate", "--base", "zimage-base", "--backend", "toy-trainer", "--gpu", "rtx-4090"]
    doc = kura(*argv, "--json").json()
    assert [s["step"] for s in doc["steps"]] == ["prepare", "train"]
    assert doc["verdict"] == {"fits": False, "worst_step": "train", "unsized": []}
    small = kura(*argv, "--set", "backend.config.shrink_activations=true", "--json").json()
    assert small["verdict"]["fits"] is True
    refused = kura(*argv, "--set", "backend.config.batch=3", "--json")
    assert refused.exit_code != 0 and "batch" in refused.json()["error"]["message"]


def test_batch_is_the_recipes_effective_batch(kura) -> None:
    doc = kura("estimate", "--base", "zimage-base", "--batch", "4", "--json").json()
    assert doc["whatif"]["effective_batch"] == 4
    assert (doc["config"]["micro_batch"], doc["config"]["grad_accum"]) == (1, 4)
    micro = kura(
        "estimate",
        "--base",
        "zimage-base",
        "--batch",
        "4",
        "--set",
        "backend.config.batch_size=2",
        "--json",
    ).json()
    assert (micro["config"]["micro_batch"], micro["config"]["grad_accum"]) == (2, 2)


def test_run_estimate_renders_every_step_and_the_verdict(kura, workspace: Path, tmp_path) -> None:
    from PIL import Image

    source = tmp_path / "src"
    source.mkdir()
    for index in range(3):
        Image.new("RGB", (1024, 1024), (70 * index, 90, 40)).save(source / f"{index}.png")
        (source / f"{index}.txt").write_text(f"myaku, item {index}\n")
    ws = ["-w", str(workspace)]
    assert kura(*ws, "dataset", "add", "myaku", source).exit_code == 0
    new = kura(*ws, "run", "new", "--dataset", "myaku", "--base", "aitk-zimage-base", "--json")
    assert new.exit_code == 0, new.stdout
    shown = kura(*ws, "run", "estimate", new.json()["run"], "--gpu", "l40s")
    assert shown.exit_code == 0, shown.stderr
    # Kura writes gradient_checkpointing: false: as written the 1024-px step (AI-Toolkit's
    # bucket of these 1024-px pictures) does not fit.
    assert "does not fit (worst step: train@" in shown.stdout and "source" in shown.stdout


def test_the_caching_steps_are_timed_and_the_whole_estimate_counts_them(kura) -> None:
    """Issue 12 item 10: every step's time with its band, the caching steps included."""
    doc = kura("estimate", "--base", "zimage-base", "--gpu", "h100-sxm", "--json").json()
    steps = {s["step"]: s for s in doc["steps"]}
    for name in ("cache_latents", "cache_text_encoder"):
        assert steps[name]["seconds"] > 0 and steps[name]["seconds_band"] == 0.6
        assert "not measured" in steps[name]["source"]
    whole = doc["time_and_cost"]
    assert whole["untimed_steps"] == []
    assert set(whole["by_step_hours"]) == {"cache_latents", "cache_text_encoder", "train"}
    assert whole["band_by_step"]["cache_text_encoder"] == 0.6
    text = kura("estimate", "--base", "zimage-base", "--gpu", "h100-sxm").stdout
    assert "every step: about" in text
    assert "loading" in text and "GB/s [assumed]" in text
