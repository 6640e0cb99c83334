"""The bundle table: coverage, consistency, and the generated document."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kura.errors import NotFound
from kura.models.bundles import get_bundle, list_bundles, render_markdown
from kura.models.checks import components_for
from kura.models.signatures import ARCHITECTURES, component_by_id

DOC = Path(__file__).resolve().parents[2] / "docs" / "model-bundles.md"


def test_every_architecture_has_a_bundle() -> None:
    covered = {b.architecture for b in list_bundles() if b.supported}
    assert covered == set(ARCHITECTURES)


def test_named_bundles_exist() -> None:
    for bundle_id in (
        "flux2-klein-9b",
        "flux2-dev",
        "flux1-kontext-dev",
        "wan2.1-t2v-14b",
        "wan2.1-i2v-14b",
        "wan2.2-t2v-a14b",
        "wan2.2-i2v-a14b",
        "wan2.2-ti2v-5b",
        "qwen-image",
        "qwen-image-edit-2511",
        "zimage-base",
        "zimage-turbo",
        "hunyuan-video",
        "hunyuan-video-1.5-t2v",
        "framepack",
        "krea2",
        "hidream-o1",
        "ideogram4",
    ):
        assert get_bundle(bundle_id).id == bundle_id


def test_components_serve_their_role_and_architecture() -> None:
    for bundle in list_bundles():
        assert bundle.backend in ("musubi-tuner", "ai-toolkit", "kohakumoss")
        for spec in bundle.files:
            assert spec.sources
            for component in spec.components:
                assert component_by_id(component).role == spec.role, (bundle.id, spec.slot)
                if bundle.supported:
                    assert component in components_for(bundle.architecture, spec.role), (
                        bundle.id,
                        spec.slot,
                    )


def test_no_invented_digests() -> None:
    for bundle in list_bundles():
        for spec in bundle.files:
            assert spec.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", spec.sha256)


def test_unknown_bundle_suggests_close_ids() -> None:
    with pytest.raises(NotFound) as info:
        get_bundle("flux2-klein9b")
    assert "flux2-klein-9b" in info.value.hint


def test_to_dict_shape() -> None:
    doc = get_bundle("flux2-klein-base-9b").to_dict()
    assert doc["trainer"] == {"model_version": "klein-base-9b"}
    assert doc["roles"]["vae"]["components"] == ["flux2-vae"]
    assert doc["roles"]["text_encoder"]["filename"].endswith("-00001-of-00004.safetensors")


def test_committed_doc_matches_the_table() -> None:
    expected = render_markdown()
    actual = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert actual == expected, (
        "docs/model-bundles.md is stale: run "
        "`python -m kura.models.bundles > docs/model-bundles.md`"
    )


def test_every_supported_bundle_names_an_estimator_model_that_exists() -> None:
    from kura.sizing.shapes import get_shape

    for bundle in (b for b in list_bundles() if b.backend == "musubi-tuner"):
        assert bundle.estimator_model is not None, bundle.id
        shape = get_shape(bundle.estimator_model)
        assert shape.architecture == bundle.architecture, bundle.id


def test_bundle_slots_are_the_roles_the_musubi_adapter_takes() -> None:
    from kura.backends.musubi import KNOWN_ROLES

    for bundle in list_bundles():
        if bundle.backend == "musubi-tuner":
            assert set(bundle.slots) <= set(KNOWN_ROLES), bundle.id


def test_native_resolution_is_data_with_its_source() -> None:
    from kura.models.bundles import _native_resolution

    k5 = get_bundle("kandinsky5-pro-t2v-5s")
    assert k5.native_resolutions == ((512, 512),)
    assert "configs.py" in k5.native_resolution_source
    assert k5.to_dict()["native_resolutions"] == [[512, 512]]
    with pytest.raises(ValueError, match="needs a source"):
        _native_resolution("x", {"sizes": [[512, 512]]})
    with pytest.raises(ValueError, match="width, height"):
        _native_resolution("x", {"sizes": [[512]], "source": "s"})


def test_a_bundle_lists_only_the_backends_that_accept_it() -> None:
    """AI-Toolkit loads its own layout and refuses Musubi's bundles (and the other way): a
    bundle's ``backends`` is its own trainer, or none where no trainer takes it."""
    from kura.models.bundle_list import bundle_list

    listed = {entry.bundle.id: entry for entry in bundle_list().bundles}
    for bundle_id, entry in listed.items():
        assert entry.backends in ((entry.bundle.backend,), ()), bundle_id
    unaccepted = sorted(i for i, e in listed.items() if not e.backends)
    # unsupported by Musubi; a Musubi variant Kura's adapter table does not have
    assert unaccepted == ["qwen-image-layered", "wan2.2-ti2v-5b"]
    assert listed["flux2-dev"].to_dict()["backends"] == ["musubi-tuner"]
    assert listed["aitk-flux2-dev"].to_dict()["backends"] == ["ai-toolkit"]
