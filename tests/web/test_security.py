"""The guards: loopback-only without a token, the token on every request, CSRF and origin
on the one POST, and no request path reaching outside the workspace."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from kura.cli.main import main
from kura.errors import NotFound, UsageError
from kura.web.app import COOKIE_NAME
from kura.web.security import (
    check_bind,
    is_loopback,
    is_loopback_host_header,
    local_redirect,
    resolve_media,
)
from tests.web.helpers import client, csrf_of
from tests.web.workspace_builder import WebWorkspace

TOKEN = "a-long-enough-test-token-0123456789"


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("outside")
    (folder / "secret.png").write_bytes(b"\x89PNG outside the workspace")
    return folder


@pytest.mark.parametrize(
    "path",
    [
        "/files/../../etc/passwd",
        "/files/%2e%2e/%2e%2e/etc/passwd",
        "/files/runs/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/files/%2Fetc%2Fpasswd",
        "/files//etc/passwd",
        "/files/runs/..%2F..%2F..%2Fetc%2Fpasswd",
        "/files/runs%5C..%5C..%5Cetc%5Cpasswd",
        "/files/kura.toml",
        "/files/.kura/lock",
        "/files/runs/x/%00.png",
    ],
)
def test_paths_outside_the_workspace_or_not_media_are_refused(web: WebWorkspace, path: str) -> None:
    answer = client(web.workspace).get(path)
    assert answer.status_code in (400, 404)
    assert "root:" not in answer.text


def test_a_symlink_pointing_out_is_refused(web: WebWorkspace, outside: Path) -> None:
    link = web.workspace.run_dir(web.finished) / "output" / "sample" / "escape.png"
    link.symlink_to(outside / "secret.png")
    folder_link = web.workspace.runs_dir / "elsewhere"
    folder_link.symlink_to(outside, target_is_directory=True)
    try:
        site = client(web.workspace)
        assert site.get(f"/files/runs/{web.finished}/output/sample/escape.png").status_code == 404
        assert site.get("/files/runs/elsewhere/secret.png").status_code == 404
        with pytest.raises(NotFound):
            resolve_media(web.workspace.root, f"runs/{web.finished}/output/sample/escape.png")
    finally:
        link.unlink()
        folder_link.unlink()


@pytest.mark.parametrize(
    "target", ["kura.toml", "runs/{finished}/run.yaml", "runs/{finished}/plan.json", "models"]
)
def test_a_png_named_link_to_a_workspace_file_that_is_not_media_is_refused(
    web: WebWorkspace, target: str
) -> None:
    """A `.png` symlink in a run's samples pointing at kura.toml, run.yaml or plan.json
    serves nothing: the resolved target must itself be a media file of a run or dataset."""
    link = web.workspace.run_dir(web.finished) / "output" / "sample" / "innocent.png"
    link.symlink_to(web.workspace.root / target.format(finished=web.finished))
    try:
        answer = client(web.workspace).get(f"/files/runs/{web.finished}/output/sample/innocent.png")
        assert answer.status_code == 404
        assert b"executor" not in answer.content and b"plan_id" not in answer.content
    finally:
        link.unlink()


def test_media_outside_runs_and_datasets_is_not_served(web: WebWorkspace) -> None:
    """Only runs/ and datasets/ hold media the pages show; a picture in knowledge/ or
    models/ (or a link from a run to one) is refused."""
    picture = web.workspace.knowledge_dir / "diagram.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n in knowledge")
    link = web.workspace.run_dir(web.finished) / "output" / "sample" / "diagram.png"
    link.symlink_to(picture)
    try:
        site = client(web.workspace)
        assert site.get("/files/knowledge/diagram.png").status_code == 404
        assert site.get(f"/files/runs/{web.finished}/output/sample/diagram.png").status_code == 404
        sample = next(
            p
            for p in (web.workspace.run_dir(web.finished) / "output" / "sample").iterdir()
            if p.suffix == ".png" and not p.is_symlink()
        )
        inside = web.workspace.run_dir(web.finished) / "output" / "sample" / "again.png"
        inside.symlink_to(sample)
        try:  # a link to a run's own sample is still served
            assert (
                site.get(f"/files/runs/{web.finished}/output/sample/again.png").status_code == 200
            )
        finally:
            inside.unlink()
    finally:
        link.unlink()
        picture.unlink()


def test_absolute_and_parent_paths_are_refused_by_the_resolver(
    web: WebWorkspace, outside: Path
) -> None:
    for relative in (str(outside / "secret.png"), "../outside/secret.png", "runs/../kura.toml"):
        with pytest.raises(NotFound):
            resolve_media(web.workspace.root, relative)


def test_loopback_names() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"]))
    assert not any(map(is_loopback, ["0.0.0.0", "192.168.1.4", "::", "example.org"]))


def test_a_non_loopback_bind_without_a_token_is_refused() -> None:
    with pytest.raises(UsageError, match="no token is set"):
        check_bind("0.0.0.0", None)
    with pytest.raises(UsageError, match="at least 16"):
        check_bind("0.0.0.0", "short")
    check_bind("0.0.0.0", TOKEN)
    check_bind("127.0.0.1", None)


def test_kura_serve_refuses_a_public_host_without_a_token(
    web: WebWorkspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KURA_WEB_TOKEN", raising=False)
    code = main(["--json", "-w", str(web.workspace.root), "serve", "--host", "0.0.0.0"])
    assert code == UsageError.exit_code
    assert '"type": "usage-error"' in capsys.readouterr().out


def test_kura_serve_refuses_a_port_in_use(
    web: WebWorkspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["--json", "-w", str(web.workspace.root), "serve", "--port", str(port)])
    assert code == UsageError.exit_code
    assert "cannot listen" in capsys.readouterr().out


def test_without_a_token_only_loopback_host_headers_are_served(web: WebWorkspace) -> None:
    assert client(web.workspace, base_url="http://localhost:8765").get("/").status_code == 200
    rebound = client(web.workspace, base_url="http://attacker.example:8765").get("/")
    assert rebound.status_code == 400


def test_with_a_token_every_request_needs_it(web: WebWorkspace) -> None:
    site = client(web.workspace, token=TOKEN, base_url="http://192.168.1.4:8765")
    name = next((web.workspace.run_dir(web.finished) / "output" / "sample").iterdir()).name
    for path in (
        "/",
        f"/runs/{web.finished}",
        f"/api/runs/{web.finished}/status",
        "/knowledge",
        "/static/kura.css",
        f"/files/runs/{web.finished}/output/sample/{name}",
    ):
        assert site.get(path).status_code == 401, path
    assert (
        site.get("/", headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
    )
    assert site.get("/?token=wrong-token-0123456789").status_code == 401
    assert site.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_a_token_login_sets_a_cookie_and_drops_the_token_from_the_url(
    web: WebWorkspace,
) -> None:
    site = client(web.workspace, token=TOKEN, base_url="http://192.168.1.4:8765")
    login = site.get(f"/runs/{web.finished}?token={TOKEN}", follow_redirects=False)
    assert login.status_code == 303
    assert login.headers["location"] == f"/runs/{web.finished}"
    cookie = login.headers["set-cookie"]
    assert f"{COOKIE_NAME}=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert site.get(f"/runs/{web.finished}").status_code == 200  # the cookie now
    assert site.get("/static/kura.css").status_code == 200


def test_posts_need_the_csrf_token_and_the_same_origin(web: WebWorkspace) -> None:
    site = client(web.workspace)
    notes = web.workspace.run_dir(web.finished) / "notes.md"
    notes.unlink(missing_ok=True)
    url = f"/runs/{web.finished}/evaluate"
    assert site.post(url, data={"rating": "3"}).status_code == 403
    assert site.post(url, data={"rating": "3", "csrf": "forged"}).status_code == 403
    token = csrf_of(site.get(f"/runs/{web.finished}").text)
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999"):
        cross = site.post(url, data={"rating": "3", "csrf": token}, headers={"Origin": origin})
        assert cross.status_code == 403, origin
    assert not notes.exists()
    same = site.post(
        url,
        data={"rating": "3", "csrf": token},
        headers={"Origin": "http://127.0.0.1"},
        follow_redirects=False,
    )
    assert same.status_code == 303
    assert "- rating: 3/5" in notes.read_text()
    notes.unlink()


def test_pages_carry_a_strict_content_security_policy(web: WebWorkspace) -> None:
    answer = client(web.workspace).get("/")
    policy = answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "same-origin"


def test_kura_help_does_not_import_the_web_stack() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from kura.cli.main import main; "
        "main(['--help']); main(['serve', '--help']); "
        "print([m for m in ('fastapi', 'starlette', 'uvicorn', 'jinja2') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().endswith("[]")


def test_serve_without_the_web_extra_says_how_to_install_it(
    web: WebWorkspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    code = main(["--json", "-w", str(web.workspace.root), "serve"])
    assert code == 7
    error = json.loads(capsys.readouterr().out)["error"]
    assert "kura[web]" in error["hint"]


def test_media_behind_a_link_is_served_typed_by_the_requested_name(web: WebWorkspace) -> None:
    media = web.workspace.datasets_dir / "linked" / "media"
    media.mkdir(parents=True)
    blob = web.workspace.datasets_dir / "linked" / "blob.bin"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n not really")
    (media / "link.png").symlink_to(blob)
    (media / "zero.png").symlink_to("/dev/zero")
    os.mkfifo(media / "pipe.png")
    (media / "state.png").symlink_to(web.workspace.state_dir / "lock")
    try:
        site = client(web.workspace)
        served = site.get("/files/datasets/linked/media/link.png")
        assert served.status_code == 200
        assert served.headers["content-type"] == "image/png"
        for name in ("zero.png", "pipe.png", "state.png", "gone.png"):
            assert site.get(f"/files/datasets/linked/media/{name}").status_code == 404, name
    finally:
        shutil.rmtree(web.workspace.datasets_dir / "linked")


@pytest.mark.parametrize(
    "host",
    [
        "evil.com:80@127.0.0.1",
        "127.0.0.1@evil.com",
        "127.0.0.1.evil.com",
        "localhost.evil.com:8765",
        "127.0.0.1:8765/evil",
        "[::1]x",
        "127.0.0.256",
        "",
    ],
)
def test_without_a_token_host_headers_must_be_exactly_loopback(
    web: WebWorkspace, host: str
) -> None:
    answer = client(web.workspace).get("/", headers={"host": host})
    assert answer.status_code == 400, host


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST:8765", "127.0.0.1", "127.9.8.7:1", "[::1]:8765"]
)
def test_loopback_host_headers_are_served(web: WebWorkspace, host: str) -> None:
    assert is_loopback_host_header(host)
    assert client(web.workspace).get("/", headers={"host": host}).status_code == 200


@pytest.mark.parametrize("path", ["//evil.com/", "//evil.com/runs", "/\\evil.com/", "/%5Cevil.com"])
def test_the_token_login_never_redirects_off_site(web: WebWorkspace, path: str) -> None:
    site = client(web.workspace, token=TOKEN, base_url="http://192.168.1.4:8765")
    login = site.get(f"{path}?token={TOKEN}", follow_redirects=False)
    assert login.status_code == 303
    location = login.headers["location"]
    assert location.startswith("/") and not location.startswith("//") and "\\" not in location


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/runs/x?a=1", "/runs/x?a=1"),
        ("//evil.com/", "/"),
        ("/\\evil.com", "/"),
        ("https://evil.com/", "/"),
        ("javascript:alert(1)", "/"),
        ("/runs/\x00x", "/"),
        ("runs/x", "/"),
    ],
)
def test_local_redirect_accepts_only_same_origin_paths(target: str, expected: str) -> None:
    assert local_redirect(target) == expected
