"""Resolve a bundle's files from a workspace, given paths and the hub cache; lock them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kura.errors import CheckFailed, Unsupported, UsageError
from kura.models.bundles import get_bundle
from kura.models.layouts import component_layout, write_component, write_sparse_safetensors
from kura.models.lockdoc import build_lock, lock_text, write_lock
from kura.models.resolve import parse_path_overrides, resolve_bundle

from .conftest import put_in_hub_cache

BUNDLE = "flux2-klein-base-9b"


def _shard_qwen3_8b(cache: Path) -> list[Path]:
    layout = component_layout("qwen3-8b")
    names = sorted(layout)
    parts = [names[i::4] for i in range(4)]
    return [
        put_in_hub_cache(
            cache,
            "black-forest-labs/FLUX.2-klein-9B",
            f"text_encoder/model-{i + 1:05d}-of-00004.safetensors",
            {n: layout[n] for n in part},
        )
        for i, part in enumerate(parts)
    ]


@pytest.fixture
def workspace_models(tmp_path: Path) -> Path:
    models = tmp_path / "ws" / "models"
    models.mkdir(parents=True)
    write_component(models / "flux2-klein-base-9b.safetensors", "flux2-klein-9b-dit")
    write_component(models / "sub" / "ae.safetensors", "flux2-vae")
    return models


def test_resolves_workspace_and_hub_cache(workspace_models: Path, isolated_caches: Path) -> None:
    shards = _shard_qwen3_8b(isolated_caches)
    resolution = resolve_bundle(BUNDLE, models_dir=workspace_models)
    doc = resolution.to_dict()
    assert doc["kind"] == "model-resolve"
    assert doc["ok"] is True
    roles = {r["slot"]: r for r in doc["roles"]}
    assert roles["dit"]["source"] == "workspace"
    assert roles["dit"]["component"] == "flux2-klein-9b-dit"
    assert roles["vae"]["path"].endswith("sub/ae.safetensors")
    assert roles["text_encoder"]["source"] == "hf-cache"
    assert roles["text_encoder"]["component"] == "qwen3-8b"
    assert roles["text_encoder"]["shards"] == [str(p) for p in shards]
    assert {c["status"] for c in doc["cross_checks"]} == {"ok"}
    assert doc["missing"] == []


def test_missing_roles_reported_with_download_info(workspace_models: Path) -> None:
    doc = resolve_bundle(BUNDLE, models_dir=workspace_models).to_dict()
    assert doc["missing"] == ["text_encoder"]
    assert doc["download"] == {"files": 1, "bytes_known": 0, "sizes_unknown": 1}
    assert doc["ok"] is False


def test_wrong_file_found_by_name_is_refused_and_next_candidate_used(
    workspace_models: Path, isolated_caches: Path
) -> None:
    write_component(workspace_models / "sub" / "ae.safetensors", "flux1-ae")
    doc = resolve_bundle(BUNDLE, models_dir=workspace_models).to_dict()
    vae = next(r for r in doc["roles"] if r["slot"] == "vae")
    assert vae["status"] == "refused"
    assert "FLUX.1 autoencoder" in vae["problems"][0]
    put_in_hub_cache(
        isolated_caches,
        "black-forest-labs/FLUX.2-dev",
        "ae.safetensors",
        component_layout("flux2-vae"),
    )
    doc = resolve_bundle(BUNDLE, models_dir=workspace_models).to_dict()
    vae = next(r for r in doc["roles"] if r["slot"] == "vae")
    assert (vae["status"], vae["source"]) == ("ok", "hf-cache")
    assert vae["rejected"][0]["status"] == "refused"


def test_given_paths_and_wrong_variant(tmp_path: Path, workspace_models: Path) -> None:
    other = write_component(tmp_path / "dit.safetensors", "flux2-klein-4b-dit")
    bundle = get_bundle(BUNDLE)
    doc = resolve_bundle(
        bundle,
        models_dir=workspace_models,
        paths=parse_path_overrides(["dit=" + str(other)], bundle),
    ).to_dict()
    dit = next(r for r in doc["roles"] if r["slot"] == "dit")
    assert dit["source"] == "given"
    assert dit["status"] == "refused"
    assert "takes the FLUX.2 klein 9B DiT" in dit["problems"][0]
    with pytest.raises(UsageError):
        parse_path_overrides(["decoder=x"], bundle)
    with pytest.raises(UsageError):
        parse_path_overrides(["dit"], bundle)


def test_unsupported_bundle() -> None:
    with pytest.raises(Unsupported, match="ti2v"):
        resolve_bundle("wan2.2-ti2v-5b")


def test_pickle_and_unsigned_roles(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / "models_t5_umt5-xxl-enc-bf16.pth").write_bytes(b"PK\x03\x04" + b"\0" * 10)
    doc = resolve_bundle("wan2.1-t2v-14b", models_dir=models).to_dict()
    t5 = next(r for r in doc["roles"] if r["slot"] == "text_encoder")
    assert t5["status"] == "unverified"
    write_component(models / "ideogram4_fp8_scaled.safetensors", "sd-vae")
    doc = resolve_bundle("ideogram4", models_dir=models).to_dict()
    dit = next(r for r in doc["roles"] if r["slot"] == "dit")
    assert dit["status"] == "refused"  # a recognised file of another role is never "unverified"
    write_sparse_safetensors(
        models / "ideogram4_fp8_scaled.safetensors",
        {"layers.0.attention.qkv.weight": ("F8_E4M3", [8, 4])},
    )
    doc = resolve_bundle("ideogram4", models_dir=models).to_dict()
    dit = next(r for r in doc["roles"] if r["slot"] == "dit")
    assert dit["status"] == "unverified"


def test_lock_is_deterministic_and_rehashes_nothing_the_second_time(
    workspace_models: Path, isolated_caches: Path, fake_hashing: list[Path], tmp_path: Path
) -> None:
    _shard_qwen3_8b(isolated_caches)
    first = build_lock(resolve_bundle(BUNDLE, models_dir=workspace_models))
    hashed = len(fake_hashing)
    assert hashed == 2  # DiT and VAE; the hub-cache shards are trusted by blob name
    second = build_lock(resolve_bundle(BUNDLE, models_dir=workspace_models))
    assert len(fake_hashing) == hashed
    assert lock_text(first) == lock_text(second)
    te = first["roles"]["text_encoder"]
    assert te["sha256_source"] == "hf-etag"
    assert "/snapshots/" in te["path"]
    assert all("/snapshots/" in shard["path"] for shard in te["shards"])
    assert len(te["shards"]) == 3
    assert first["roles"]["dit"]["component"] == "flux2-klein-9b-dit"
    assert list(json.loads(lock_text(first))) == sorted(first)
    target = tmp_path / "lock.json"
    assert write_lock(target, first) is True
    mtime = target.stat().st_mtime_ns
    assert write_lock(target, second) is False
    assert target.stat().st_mtime_ns == mtime


def test_lock_pending_and_refused(workspace_models: Path, fake_hashing: list[Path]) -> None:
    lock = build_lock(resolve_bundle(BUNDLE, models_dir=workspace_models))
    assert lock["roles"]["text_encoder"]["sha256"] == "pending"
    assert lock["roles"]["text_encoder"]["path"] is None
    write_component(workspace_models / "sub" / "ae.safetensors", "flux1-ae")
    with pytest.raises(CheckFailed, match="cannot be locked"):
        build_lock(resolve_bundle(BUNDLE, models_dir=workspace_models))
