"""The site's guards, free of any web framework: binding, tokens, CSRF and safe file paths.

* A loopback bind needs no token; any other bind refuses to start without one.
* Tokens and CSRF values are compared in constant time.
* A path from a request is relative, has no ``..``, hidden or empty parts, names a media
  file of a run or a dataset (``runs/…``, ``datasets/…``) and resolves (symlinks followed)
  to an existing regular file in those folders whose first bytes are an image or video
  signature, so a ``.png`` link to kura.toml or run.yaml serves nothing (a link to a
  content-addressed blob of a picture does); its media type comes from the requested name.
* Without a token, only ``Host`` headers that are exactly a loopback name are served.
* Redirects go only to same-origin paths.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import stat
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from kura.errors import NotFound, UsageError

__all__ = [
    "LOOPBACK_NAMES",
    "MEDIA_TYPES",
    "check_bind",
    "is_loopback",
    "is_loopback_host_header",
    "local_redirect",
    "media_type",
    "resolve_media",
    "same_secret",
]

TOKEN_ENV = "KURA_WEB_TOKEN"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".mp4": "video/mp4",
    ".webm": "video/webm",
}
MEDIA_FOLDERS = frozenset({"runs", "datasets"})
"""The workspace folders whose media the site serves: run samples and dataset files."""
_MEDIA_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"\x1a\x45\xdf\xa3")
"""PNG, JPEG, GIF and Matroska/WebM first bytes (WebP and MP4 are matched by position)."""
MIN_TOKEN_LENGTH = 16


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


_LOOPBACK_HOST_HEADER = re.compile(
    r"(?:localhost|127(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}|\[::1\])"
    r"(?::[0-9]{1,5})?",
    re.IGNORECASE,
)


def is_loopback_host_header(header: str) -> bool:
    """Whether a ``Host`` header is exactly ``localhost``, ``127.x.x.x`` or ``[::1]`` with an
    optional port. Parsing it as a URL would accept ``evil.com:80@127.0.0.1`` (userinfo),
    which a DNS-rebinding page can send; nothing but the exact forms passes here."""
    return _LOOPBACK_HOST_HEADER.fullmatch(header) is not None


def local_redirect(target: str) -> str:
    """``target`` when it is a same-origin path (one leading ``/``, no ``//``, no ``\\``, no
    scheme or control characters), else ``/``: a redirect never leaves the site."""
    if (
        not target.startswith("/")
        or target.startswith("//")
        or "\\" in target
        or any(ord(c) < 0x21 or ord(c) == 0x7F for c in target)
        or urlsplit(target).scheme
        or urlsplit(target).netloc
    ):
        return "/"
    return target


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a token, and a token too short to be a secret."""
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise UsageError(
            f"the web token is {len(token)} characters; at least {MIN_TOKEN_LENGTH} are needed",
            hint='generate one with `python -c "import secrets; print(secrets.token_urlsafe())"`',
        )
    if not is_loopback(host) and not token:
        raise UsageError(
            f"--host {host} is reachable from other machines and no token is set",
            hint=f"pass --token TOKEN or set {TOKEN_ENV}; open the page once with ?token=TOKEN",
        )


def same_secret(given: str | None, expected: str) -> bool:
    """Constant-time comparison; a missing value never matches."""
    if not given:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def media_type(relative: str) -> str:
    """The media type of the file a request names, from the requested name (never from a
    link's target, which may have any suffix)."""
    return MEDIA_TYPES[PurePosixPath(relative).suffix.lower()]


def resolve_media(root: Path, relative: str) -> Path:
    """The media file ``relative`` names inside ``root``; anything else is :class:`NotFound`.

    The same refusal covers every escape attempt (``..``, absolute paths, backslashes, hidden
    parts, a symlink pointing out), so a probe learns nothing about files outside.
    """
    refused = NotFound(f"no media file {relative!r} in the workspace's runs or datasets")
    if not relative or "\x00" in relative or "\\" in relative:
        raise refused
    pure = PurePosixPath(relative)
    if pure.is_absolute() or relative.startswith("/"):
        raise refused
    parts = relative.split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        raise refused
    suffix = pure.suffix.lower()
    if suffix not in MEDIA_TYPES:
        raise refused
    base = root.resolve()
    try:
        target = (base / pure).resolve(strict=True)
    except (OSError, RuntimeError):
        raise refused from None
    if parts[0] not in MEDIA_FOLDERS or not _is_media_file(target, base):
        raise refused
    return target


def _is_media_file(target: Path, base: Path) -> bool:
    """Whether the resolved ``target`` is a regular media file of a run or a dataset,
    outside any hidden folder (.kura/): judged by its own bytes, since a link's target may
    have any name."""
    if not target.is_relative_to(base) or not _is_regular(target):
        return False
    parts = target.relative_to(base).parts
    if parts[0] not in MEDIA_FOLDERS or any(part.startswith(".") for part in parts):
        return False
    return _has_media_signature(target)


def _has_media_signature(path: Path) -> bool:
    """PNG, JPEG, GIF, WebP, an ISO media file (MP4: ``ftyp`` at byte 4) or Matroska/WebM."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return False
    return (
        head.startswith(_MEDIA_MAGIC)
        or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")
        or head[4:8] == b"ftyp"
    )


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False
