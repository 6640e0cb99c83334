"""Role checks and cross-checks: refusals say what the file is and what the role needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kura.errors import CheckFailed, UsageError
from kura.models.checks import check_role, components_for, cross_check, require_role
from kura.models.identify import identify
from kura.models.layouts import write_component, write_sparse_safetensors
from kura.models.signatures import ARCHITECTURES


def report_of(tmp_path: Path, component: str, **kwargs):
    return identify(write_component(tmp_path / f"{component}.safetensors", component, **kwargs))


def test_flux1_ae_refused_for_flux2(tmp_path: Path) -> None:
    verdict = check_role(report_of(tmp_path, "flux1-ae"), "flux2", "vae")
    assert verdict.status == "refused"
    message = verdict.refusals[0]
    assert message.startswith("this is the FLUX.1 autoencoder (16 latent channels)")
    assert "FLUX.2 needs the FLUX.2 VAE (32 latent channels)" in message


def test_flux2_vae_accepted(tmp_path: Path) -> None:
    verdict = check_role(report_of(tmp_path, "flux2-vae"), "flux2", "vae")
    assert (verdict.status, verdict.refusals, verdict.warnings) == ("ok", (), ())


def test_wrong_role(tmp_path: Path) -> None:
    verdict = check_role(report_of(tmp_path, "qwen3-8b"), "flux2", "dit")
    assert verdict.status == "refused"
    assert "a text encoder, not a DiT" in verdict.refusals[0]


def test_every_architecture_has_a_dit(tmp_path: Path) -> None:
    missing = [a for a in ARCHITECTURES if not components_for(a, "dit")]
    assert missing == ["ideogram4"]


def test_unsigned_role_is_unverified(tmp_path: Path) -> None:
    unknown = identify(
        write_sparse_safetensors(tmp_path / "i4.safetensors", {"x.weight": ("F8_E4M3", [4, 4])})
    )
    verdict = check_role(unknown, "ideogram4", "dit")
    assert verdict.status == "unverified"
    assert check_role(unknown, "flux2", "dit").status == "refused"


def test_candidates_warn(tmp_path: Path) -> None:
    verdict = check_role(report_of(tmp_path, "wan-t2v-14b-dit"), "wan", "dit")
    assert verdict.status == "warning"
    assert "cannot tell" in verdict.warnings[0]


@pytest.mark.parametrize("variant", ["fp8-scaled-comfy", "nvfp4"])
def test_prequantised_dit_refused(tmp_path: Path, variant: str) -> None:
    verdict = check_role(report_of(tmp_path, "wan-t2v-14b-dit", variant=variant), "wan", "dit")
    assert verdict.status == "refused"
    assert "Musubi does not load pre-quantised DiTs" in verdict.refusals[0]


def test_plain_fp8_rules(tmp_path: Path) -> None:
    wan = check_role(report_of(tmp_path, "wan-t2v-14b-dit", variant="fp8"), "wan", "dit")
    assert wan.status == "warning"
    assert any("without --fp8_scaled" in w for w in wan.warnings)
    qwen = check_role(report_of(tmp_path, "qwen-image-dit", variant="fp8"), "qwen_image", "dit")
    assert qwen.status == "refused"


def test_prequantised_text_encoder_warns_and_ideogram_accepts(tmp_path: Path) -> None:
    verdict = check_role(
        report_of(tmp_path, "qwen3-8b", variant="fp8-scaled-comfy"), "flux2", "text_encoder"
    )
    assert verdict.status == "warning"
    ideogram = check_role(
        report_of(tmp_path, "qwen3-vl-8b", variant="fp8-scaled-comfy"), "ideogram4", "text_encoder"
    )
    assert ideogram.status == "ok"


def test_fp16_hv15_warns(tmp_path: Path) -> None:
    verdict = check_role(
        report_of(tmp_path, "hunyuan-video-1.5-dit", variant="fp16"), "hunyuan_video_1_5", "dit"
    )
    assert any("fp16" in w for w in verdict.warnings)


def test_diffusers_layout_refused(tmp_path: Path) -> None:
    verdict = check_role(report_of(tmp_path, "flux2-diffusers-dit"), "flux2", "dit")
    assert verdict.status == "refused"
    assert "original BFL file" in " ".join(verdict.refusals)


def test_unsupported_wan_variant_refused_with_reason(tmp_path: Path) -> None:
    verdict = check_role(report_of(tmp_path, "wan22-ti2v-5b-dit"), "wan", "dit")
    assert verdict.status == "refused"
    assert "no TI2V-5B task" in verdict.refusals[0]


def test_usage_errors(tmp_path: Path) -> None:
    report = report_of(tmp_path, "flux2-vae")
    with pytest.raises(UsageError, match="unknown architecture"):
        check_role(report, "flux3", "vae")
    with pytest.raises(UsageError, match="unknown role"):
        check_role(report, "flux2", "decoder")


def test_require_role_raises(tmp_path: Path) -> None:
    with pytest.raises(CheckFailed, match=r"FLUX\.1 autoencoder"):
        require_role(report_of(tmp_path, "flux1-ae"), "flux2", "vae")


def test_cross_checks(tmp_path: Path) -> None:
    dit = report_of(tmp_path, "flux2-klein-9b-dit")
    results = cross_check([dit, report_of(tmp_path, "flux1-ae"), report_of(tmp_path, "qwen3-4b")])
    by_check = {r.check: r for r in results}
    assert by_check["vae-latent-channels"].status == "mismatch"
    assert "16 latent channels, the DiT takes 32" in by_check["vae-latent-channels"].message
    assert by_check["text-encoder-width"].status == "mismatch"
    good = cross_check([dit, report_of(tmp_path, "flux2-vae"), report_of(tmp_path, "qwen3-8b")])
    assert {r.status for r in good} == {"ok"}


def test_cross_check_same_width_wrong_model(tmp_path: Path) -> None:
    results = cross_check([report_of(tmp_path, "wan-t2v-14b-dit"), report_of(tmp_path, "t5-xxl")])
    assert results[0].status == "mismatch"
    assert "right width (4096)" in results[0].message


def test_image_encoder_cross_check(tmp_path: Path) -> None:
    results = cross_check(
        [report_of(tmp_path, "framepack-dit"), report_of(tmp_path, "clip-vit-h-vision")]
    )
    assert results[0].check == "image-encoder-width"
    assert results[0].status == "mismatch"


def test_unknown_file_without_a_request_is_unverified(tmp_path: Path) -> None:
    unknown = identify(write_sparse_safetensors(tmp_path / "u.safetensors", {"x": ("F32", [2])}))
    assert check_role(unknown).status == "unverified"
    assert check_role(unknown, role="vae").status == "refused"


def test_lora_for_another_architecture(tmp_path: Path) -> None:
    tensors = {
        "lora_unet_blocks_0_self_attn_q.lora_down.weight": ("BF16", [4, 5120]),
        "lora_unet_blocks_0_self_attn_q.lora_up.weight": ("BF16", [5120, 4]),
    }
    lora = identify(write_sparse_safetensors(tmp_path / "l.safetensors", tensors))
    assert check_role(lora, "wan").status == "ok"
    verdict = check_role(lora, "flux2", "lora")
    assert verdict.refusals == ("this LoRA adapter targets Wan 2.1/2.2, not FLUX.2",)
