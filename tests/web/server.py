"""Run the real site (uvicorn) in a thread on a free loopback port, for browser tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from kura.web.app import create_app
from kura.workspace import Workspace


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_server(workspace: Workspace, token: str | None = None) -> Iterator[str]:
    """Yield the base URL of a live server over ``workspace``; stop it afterwards."""
    port = free_port()
    config = uvicorn.Config(
        create_app(workspace, token=token), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="kura-web-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the test server did not start on port {port}")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
