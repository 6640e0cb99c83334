"""Fetch against a loopback server that speaks the hub's resolve protocol (never the real hub)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kura.errors import KuraError, NotFound
from kura.models.fetch import fetch_bundle, shard_filenames
from kura.models.layouts import write_component
from kura.models.resolve import resolve_bundle

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_test_token_never_written"


class Hub:
    """Files by (repo, filename); what was asked; which files to cut once mid-body."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], bytes] = {}
        self.cut_once: set[tuple[str, str]] = set()
        self.gated: set[str] = set()
        self.requests: list[dict[str, str | None]] = []


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return None

        def _lookup(self) -> tuple[tuple[str, str], bytes] | None:
            found = re.match(
                r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$", self.path
            )
            self.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "range": self.headers.get("Range"),
                    "auth": self.headers.get("Authorization"),
                }
            )
            if not found:
                return None
            key = (found["repo"], found["file"])
            return (key, hub.files[key]) if key in hub.files else None

        @property
        def requests(self) -> list[dict[str, str | None]]:
            return hub.requests

        def _not_found(self) -> None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _common_headers(self, data: bytes) -> None:
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Accept-Ranges", "bytes")

        def _gated(self, key: tuple[str, str]) -> bool:
            if key[0] not in hub.gated:
                return False
            self.send_response(401)
            self.send_header("X-Error-Code", "GatedRepo")
            self.send_header("X-Error-Message", "Access to this model is restricted")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True

        def do_HEAD(self) -> None:
            found = self._lookup()
            if found is None:
                return self._not_found()
            key, data = found
            if self._gated(key):
                return None
            self.send_response(200)
            self._common_headers(data)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            return None

        def do_GET(self) -> None:
            found = self._lookup()
            if found is None:
                return self._not_found()
            key, data = found
            if self._gated(key):
                return None
            start = 0
            wanted = self.headers.get("Range")
            if wanted:
                start = int(re.match(r"bytes=(\d+)-", wanted).group(1))
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            self._common_headers(data)
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            if key in hub.cut_once and not wanted:
                hub.cut_once.discard(key)
                self.wfile.write(data[start : len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return None
            self.wfile.write(data[start:])
            return None

    return Handler


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Hub]:
    from huggingface_hub import constants

    state = Hub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    # huggingface_hub reads these at import time; point every side request at the loopback
    # server too (it fetches an "agent harnesses" registry from ENDPOINT) and keep its
    # registry cache out of the real home folder.
    monkeypatch.setattr(constants, "ENDPOINT", url)
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(tmp_path / "agent_harnesses.json"))
    # Small read chunks, so that bytes received before a cut count as received: the
    # library resumes from the last whole chunk it wrote.
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 64 * 1024)
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _publish(hub: Hub, tmp_path: Path, repo: str, filename: str, component: str) -> bytes:
    data = write_component(tmp_path / "src" / filename.replace("/", "_"), component).read_bytes()
    hub.files[(repo, filename)] = data
    return data


def test_download_cut_in_the_middle_is_resumed(
    hub: Hub, tmp_path: Path, isolated_caches: Path
) -> None:
    data = _publish(hub, tmp_path, "black-forest-labs/FLUX.2-dev", "ae.safetensors", "flux2-vae")
    hub.cut_once.add(("black-forest-labs/FLUX.2-dev", "ae.safetensors"))
    doc = fetch_bundle("flux2-klein-base-9b", slots=["vae"], dest="cache").to_dict()
    entry = doc["files"][0]
    assert doc["ok"] is True, doc
    assert entry["status"] == "ok"
    assert entry["component"] == "flux2-vae"
    assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert entry["sha256_source"] == "hf-etag"
    assert Path(entry["path"]).read_bytes() == data
    assert Path(entry["path"]).is_relative_to(isolated_caches)
    gets = [r for r in hub.requests if r["method"] == "GET" and "/resolve/" in str(r["path"])]
    assert len(gets) == 2
    assert gets[0]["range"] is None
    resumed_from = int(re.fullmatch(r"bytes=(\d+)-", str(gets[1]["range"])).group(1))
    assert 0 < resumed_from <= len(data) // 2
    assert all(
        r["auth"] == f"Bearer {TOKEN}" for r in hub.requests if "/resolve/" in str(r["path"])
    )
    assert TOKEN not in json.dumps(doc)
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert leaked == []
    # the file is now found in the cache by resolve
    vae = next(
        r for r in resolve_bundle("flux2-klein-base-9b").to_dict()["roles"] if r["slot"] == "vae"
    )
    assert (vae["status"], vae["source"]) == ("ok", "hf-cache")


def test_wrong_file_on_the_hub_is_refused(hub: Hub, tmp_path: Path) -> None:
    _publish(hub, tmp_path, "black-forest-labs/FLUX.2-dev", "ae.safetensors", "flux1-ae")
    doc = fetch_bundle("flux2-klein-base-9b", slots=["vae"]).to_dict()
    assert doc["ok"] is False
    assert doc["files"][0]["status"] == "refused"
    assert "FLUX.1 autoencoder" in doc["files"][0]["problems"][0]


def test_download_into_workspace_models(hub: Hub, tmp_path: Path) -> None:
    _publish(hub, tmp_path, "black-forest-labs/FLUX.2-dev", "ae.safetensors", "flux2-vae")
    models = tmp_path / "ws" / "models"
    models.mkdir(parents=True)
    fetched = fetch_bundle("flux2-klein-base-9b", slots=["vae"], dest="models", models_dir=models)
    doc = fetched.to_dict()
    path = Path(doc["files"][0]["path"])
    assert path == models / "black-forest-labs/FLUX.2-dev" / "ae.safetensors"
    assert doc["files"][0]["sha256_source"] == "computed"
    vae = next(
        r
        for r in resolve_bundle("flux2-klein-base-9b", models_dir=models).to_dict()["roles"]
        if r["slot"] == "vae"
    )
    assert (vae["status"], vae["source"]) == ("ok", "workspace")


def test_gated_and_missing(hub: Hub, tmp_path: Path) -> None:
    _publish(hub, tmp_path, "black-forest-labs/FLUX.2-dev", "ae.safetensors", "flux2-vae")
    hub.gated.add("black-forest-labs/FLUX.2-dev")
    with pytest.raises(KuraError, match="gated") as info:
        fetch_bundle("flux2-klein-base-9b", slots=["vae"])
    assert "HF_TOKEN" in info.value.hint
    with pytest.raises(NotFound):
        fetch_bundle("flux2-klein-base-9b", slots=["dit"])


def test_shard_filenames() -> None:
    assert shard_filenames("te/model-00001-of-00003.safetensors") == [
        "te/model-00001-of-00003.safetensors",
        "te/model-00002-of-00003.safetensors",
        "te/model-00003-of-00003.safetensors",
    ]
    assert shard_filenames("ae.safetensors") == ["ae.safetensors"]
