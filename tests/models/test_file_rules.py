"""A trainer's rules on pre-quantised and reduced-precision files come from its backend
(``Backend.file_rules``): the bundle's backend, or the one that serves a bare architecture by
default. No other backend's bundle gets Musubi's rules."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kura.backends.base import FileRules
from kura.backends.registry import get_backend, registered_backend
from kura.models.bundles import get_bundle
from kura.models.checks import check_role, rules_backend
from kura.models.filecheck import check_files
from kura.models.identify import identify
from kura.models.layouts import write_component
from kura.models.resolve import judge_file
from tests.backends.toy.backend import ToyBackend


def _scaled_wan_dit(tmp_path: Path) -> Path:
    path = tmp_path / "wan-scaled.safetensors"
    return write_component(path, "wan-t2v-14b-dit", variant="fp8-scaled-comfy")


def test_a_bare_architecture_takes_the_rules_of_its_default_backend() -> None:
    assert rules_backend("wan") is get_backend("musubi-tuner")
    assert rules_backend(None) is get_backend("musubi-tuner")
    assert rules_backend("sdxl") is get_backend("ai-toolkit")  # AI-Toolkit alone trains it
    assert rules_backend("moss_image") is get_backend("kohakumoss")


def test_the_verdict_names_the_backend_whose_rules_it_applied(tmp_path: Path) -> None:
    report = identify(_scaled_wan_dit(tmp_path))
    musubi = check_role(report, "wan", "dit")
    assert (musubi.status, musubi.rules) == ("refused", "musubi-tuner")
    assert musubi.to_dict()["rules"] == "musubi-tuner"
    aitk = check_role(report, "wan", "dit", backend=get_backend("ai-toolkit"))
    assert aitk.rules == "ai-toolkit"
    assert not any("Musubi" in line for line in (*aitk.refusals, *aitk.warnings))
    (entry,) = check_files([_scaled_wan_dit(tmp_path)], architecture="wan", role="dit").files
    assert entry.verdict.rules == "musubi-tuner"


def test_check_role_applies_what_the_backend_says(tmp_path: Path) -> None:
    class Strict(ToyBackend):
        name = "strict-trainer"

        def file_rules(self, report: object, architecture: str | None) -> FileRules:
            return FileRules(refusals=(f"strict refuses {architecture}",), warnings=("w",))

    report = identify(write_component(tmp_path / "vae.safetensors", "flux2-vae"))
    verdict = check_role(report, "flux2", "vae", backend=Strict())
    assert (verdict.status, verdict.refusals, verdict.rules) == (
        "refused",
        ("strict refuses flux2",),
        "strict-trainer",
    )


def test_a_toy_backends_bundle_gets_no_musubi_rule(tmp_path: Path) -> None:
    path = _scaled_wan_dit(tmp_path)
    musubi_bundle = get_bundle("wan2.1-t2v-14b")
    spec = next(f for f in musubi_bundle.files if f.slot == "dit")
    refused = judge_file(path, spec, musubi_bundle)
    assert any("Musubi does not load pre-quantised DiTs" in p for p in refused.problems)
    with registered_backend(ToyBackend()) as toy:
        toy_bundle = replace(musubi_bundle, backend=toy.name)
        judged = judge_file(path, spec, toy_bundle)
    lines = (*judged.problems, *judged.warnings)
    assert not any("Musubi" in line or "--fp8" in line for line in lines), lines
