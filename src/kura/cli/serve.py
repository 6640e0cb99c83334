"""`kura serve`: the web page over the workspace (run list, progress, samples, knowledge)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["serve_command"]


@click.command("serve")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; anything but loopback needs a token.",
)
@click.option(
    "--token",
    envvar="KURA_WEB_TOKEN",
    help="Secret every request must present (env KURA_WEB_TOKEN); open the page once "
    "with ?token=TOKEN.",
)
@click.pass_obj
def serve_command(state: AppState, port: int, host: str, token: str | None) -> None:
    """Serve the web page: runs, live progress, samples, ratings and knowledge cards."""
    from kura.web.security import check_bind

    check_bind(host, token)
    _require_web_extra()
    workspace = state.workspace()
    _check_port_free(host, port)
    shown = f"[{host}]" if ":" in host else host
    doc = {
        "kind": "serve",
        "url": f"http://{shown}:{port}/",
        "workspace": str(workspace.root),
        "token_required": token is not None,
    }
    state.out.result(doc, _render_serve)

    import uvicorn

    from kura.web.app import create_app

    uvicorn.run(create_app(workspace, token=token), host=host, port=port, log_level="warning")


def _require_web_extra() -> None:
    """The web page's packages are an extra: say how to install them instead of failing."""
    from kura.extras import WEB_MODULES, require_extra

    require_extra("web", WEB_MODULES, "the web page")


def _check_port_free(host: str, port: int) -> None:
    """Fail with a usage error, before printing the URL, when the address is taken."""
    import socket

    from kura.errors import UsageError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UsageError(
                f"cannot listen on {host}:{port}: {exc.strerror}",
                hint="choose another --port, or stop the program using it",
            ) from None


def _render_serve(console: Console, doc: dict[str, Any]) -> None:
    console.print(f"Serving {doc['workspace']} at {doc['url']} (Ctrl-C to stop)")
    if doc["token_required"]:
        console.print(f"open {doc['url']}?token=TOKEN once; the browser keeps a cookie")
