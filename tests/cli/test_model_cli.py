"""`kura model …` through the real entry point, parsing the JSON result documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kura.cli.main import main
from kura.models.layouts import write_component, write_sparse_safetensors


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KURA_CACHE_DIR", str(tmp_path / "kura-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    for name in ("HF_TOKEN", "HF_ENDPOINT", "HF_HOME", "KURA_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_check_without_workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dit = write_component(tmp_path / "dit.safetensors", "flux2-klein-9b-dit")
    vae = write_component(tmp_path / "ae.safetensors", "flux2-vae")
    te = write_component(tmp_path / "te.safetensors", "qwen3-8b")
    code, doc = run(capsys, "model", "check", str(dit), str(vae), str(te))
    assert code == 0
    assert doc["kind"] == "model-check"
    assert [f["component"] for f in doc["files"]] == ["flux2-klein-9b-dit", "flux2-vae", "qwen3-8b"]
    assert {c["status"] for c in doc["cross_checks"]} == {"ok"}
    assert len(doc["cross_checks"]) == 2


def test_check_refusal_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ae = write_component(tmp_path / "ae.safetensors", "flux1-ae")
    code, doc = run(capsys, "model", "check", str(ae), "--arch", "flux2", "--role", "vae")
    assert code == 1
    verdict = doc["files"][0]["verdict"]
    assert verdict["status"] == "refused"
    assert "this is the FLUX.1 autoencoder (16 latent channels)" in verdict["refusals"][0]


def test_check_cross_mismatch_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dit = write_component(tmp_path / "dit.safetensors", "flux2-klein-9b-dit")
    te = write_component(tmp_path / "te.safetensors", "qwen3-4b")
    code, doc = run(capsys, "model", "check", str(dit), str(te))
    assert code == 1
    assert doc["cross_checks"][0]["status"] == "mismatch"


def test_check_unreadable_file_reported_exit_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\0" * 32)
    code, doc = run(capsys, "model", "check", str(bad))
    assert code == 5  # the README's exit-code table: a malformed file is invalid input
    assert doc["files"][0]["error"]["type"] == "invalid-input"
    assert "GGUF" in doc["files"][0]["error"]["message"]


def test_check_bad_arch_is_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ae = write_component(tmp_path / "ae.safetensors", "flux2-vae")
    code = main(["--json", "model", "check", str(ae), "--arch", "flux3"])
    assert code == 2
    assert "flux3" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_check_human_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lora = write_sparse_safetensors(
        tmp_path / "l.safetensors",
        {
            "lora_unet_blocks_0_self_attn_q.lora_down.weight": ("BF16", [4, 5120]),
            "lora_unet_blocks_0_self_attn_q.lora_up.weight": ("BF16", [5120, 4]),
        },
    )
    assert main(["model", "check", str(lora)]) == 0
    out = capsys.readouterr().out
    assert "LoRA format musubi, rank 4" in out


def test_bundles(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run(capsys, "model", "bundles")
    assert code == 0
    assert doc["kind"] == "model-bundles"
    first = doc["bundles"][0]
    assert {"bundle", "architecture", "backend", "roles", "trainer"} <= set(first)
    code, doc = run(capsys, "model", "bundles", "--arch", "flux2")
    assert {b["architecture"] for b in doc["bundles"]} == {"flux2"}


def _workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["init", str(tmp_path / "ws")]) == 0
    capsys.readouterr()
    return tmp_path / "ws"


def test_resolve_lock_verify_in_a_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(tmp_path, capsys)
    monkeypatch.chdir(ws)
    write_component(ws / "models" / "hidream_o1_image_bf16.safetensors", "hidream-o1-dit")
    code, doc = run(capsys, "model", "resolve", "hidream-o1")
    assert code == 0
    assert doc["kind"] == "model-resolve"
    assert doc["roles"][0]["status"] == "warning"
    assert doc["missing"] == []
    from kura.models import digests as digests_module

    calls: list[Path] = []

    def fake(path: Path, progress=None) -> str:
        calls.append(path)
        return "ab" * 32

    monkeypatch.setattr(digests_module, "hash_file", fake)
    code, lock = run(capsys, "model", "lock", "hidream-o1")
    assert code == 0
    assert lock["kind"] == "model-lock"
    assert lock["written"] is True
    assert lock["roles"]["dit"]["sha256"] == "ab" * 32
    assert Path(lock["lock_path"]) == ws / "models" / "hidream-o1.lock.json"
    code, again = run(capsys, "model", "lock", "hidream-o1")
    assert again["written"] is False
    assert len(calls) == 1
    code, verify = run(capsys, "model", "verify", "hidream-o1")
    assert verify["kind"] == "model-verify"
    assert verify["files"][0]["status"] == "ok"


def test_resolve_missing_and_path_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = run(capsys, "model", "resolve", "flux2-klein-base-9b")
    assert code == 0
    assert doc["missing"] == ["dit", "vae", "text_encoder"]
    wrong = write_component(tmp_path / "ae.safetensors", "flux1-ae")
    code, doc = run(capsys, "model", "resolve", "flux2-klein-base-9b", "--path", f"vae={wrong}")
    assert code == 1
    code = main(["--json", "model", "resolve", "no-such-bundle"])
    assert code == 6


def test_lock_needs_a_workspace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json", "model", "lock", "hidream-o1"]) == 3


def test_verify_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_sparse_safetensors(tmp_path / "small.safetensors", {"w": ("F32", [4])})
    code, doc = run(capsys, "model", "verify", str(path))
    assert code == 0
    assert doc["files"][0]["sha256_source"] == "computed"


def test_help_does_not_import_heavy_modules() -> None:
    probe = (
        "import sys; from kura.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('huggingface_hub', 'numpy', 'safetensors') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "HEAVY="


def test_verify_missing_file_is_invalid_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--json", "model", "verify", str(tmp_path / "gone.safetensors")]) == 5
    assert "does not exist" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_check_of_a_truncated_file_exits_5_even_beside_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ae = write_component(tmp_path / "ae.safetensors", "flux1-ae")
    cut = write_component(tmp_path / "cut.safetensors", "flux2-vae")
    with cut.open("r+b") as handle:
        handle.truncate(cut.stat().st_size - 1)
    code, doc = run(capsys, "model", "check", str(ae), str(cut), "--arch", "flux2", "--role", "vae")
    assert code == 5
    assert doc["files"][0]["verdict"]["status"] == "refused"
    assert "truncated" in doc["files"][1]["error"]["hint"]


def test_verify_of_a_truncated_file_is_invalid_not_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_component(tmp_path / "dit.safetensors", "flux2-klein-9b-dit")
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    code, doc = run(capsys, "model", "verify", str(path))
    assert code == 1
    [entry] = doc["files"]
    assert entry["status"] == "invalid"
    assert "the tensors need" in entry["problems"][0]
    assert doc["ok"] is False


def test_check_of_a_fifo_answers_at_once(tmp_path: Path) -> None:
    """`kura model check` on a FIFO once hung on the open: now a refusal, in a second."""
    fifo = tmp_path / "dit.safetensors"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "kura", "--json", "model", "check", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    document = json.loads(done.stdout)
    assert done.returncode == 5, done.stderr
    assert "is not a regular file" in document["files"][0]["error"]["message"]
