"""The adapter table: complete, self-consistent, and the committed doc matches it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kura.architectures import ARCHITECTURE_IDS
from kura.backends.musubi import ADAPTERS, MUSUBI_RELEASE
from kura.backends.musubi.adapter_doc import REGENERATE_COMMAND, render_adapter_doc
from kura.backends.musubi.rules import TIMESTEP_SAMPLINGS

DOC = Path(__file__).resolve().parents[3] / "docs" / "musubi-adapters.md"
ARCHITECTURES = set(ARCHITECTURE_IDS)
# MOSS-Image is KohakuMoss's (kura.backends.kohakumoss), not Musubi's.
MUSUBI = sorted(set(ARCHITECTURES) - {"moss_image"})
ROLES = {"dit", "dit_high_noise", "vae", "text_encoder", "text_encoder_2", "image_encoder"}


def test_all_twelve_architectures_have_a_record() -> None:
    assert set(ADAPTERS) == set(MUSUBI)
    for key, adapter in ADAPTERS.items():
        assert adapter.id == key


def test_release_is_pinned_once() -> None:
    assert MUSUBI_RELEASE == "0.3.4"


@pytest.mark.parametrize("architecture", MUSUBI)
def test_record_is_consistent(architecture: str) -> None:
    adapter = ADAPTERS[architecture]
    assert set(adapter.scripts) == {"cache_latents", "cache_text_encoder", "train"}
    assert adapter.network_module.startswith("networks.")
    assert adapter.smoke == "command generation checked, training smoke pending"
    roles = [r for rs in adapter.roles.values() for r in rs] + list(adapter.sample_roles)
    for variant in adapter.variants.values():
        roles += [r for rs in variant.step_roles.values() for r in rs]
        assert variant.swap_limit_source
    assert {r.role for r in roles} <= ROLES
    assert all(r.flag.startswith("--") for r in roles)
    assert "sage_attn" not in adapter.attention
    if adapter.version_flag is None:
        assert None in adapter.variants
    else:
        assert None not in adapter.variants
    for name, default in adapter.defaults.items():
        assert default.source, f"{architecture}.{name} has no source"
    assert adapter.defaults["timestep_sampling"].value in TIMESTEP_SAMPLINGS
    if adapter.accepts_video:
        assert adapter.model_fps
        assert "frame_extraction" in adapter.defaults
    if adapter.fp8_scaled == "required":
        assert adapter.fp8_base


def test_committed_doc_matches_the_table() -> None:
    expected = render_adapter_doc()
    actual = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert actual == expected, (
        f"docs/musubi-adapters.md is out of date with the adapter table; regenerate it with "
        f"`{REGENERATE_COMMAND}`"
    )
