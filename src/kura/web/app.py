"""The FastAPI application behind ``kura serve``: routes, guards and page rendering.

Build it with :func:`create_app` (tests do); every page calls the same library functions
as the CLI. Guards, in order, on every request: the Host header must be exactly a loopback
name (``localhost``, ``127.x.x.x``, ``[::1]``, optional port) when no token is set (DNS
rebinding), the token when one is set (``?token=`` once,
then a cookie, or ``Authorization: Bearer``), and on the two POSTs (a rating, a cancel) a
same-origin check and the CSRF token. Responses carry a strict Content-Security-Policy.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import FastAPI, Form, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.middleware.base import RequestResponseEndpoint

from kura.errors import (
    FileSystemError,
    InvalidInput,
    KuraError,
    NotFound,
    StateConflict,
    UsageError,
)
from kura.runs.evidence import evaluate_run
from kura.runs.following import cancel
from kura.runs.store import list_run_ids
from kura.web.samples import RunSamples, parse_side, prompt_text, run_samples
from kura.web.security import (
    is_loopback_host_header,
    local_redirect,
    media_type,
    resolve_media,
    same_secret,
)
from kura.web.views import (
    json_safe,
    knowledge_view,
    live_view,
    newest_first,
    run_entry,
    run_file_html,
)
from kura.web.views import run_list_page as run_list_page_of
from kura.workspace import Workspace, check_name

__all__ = ["COOKIE_NAME", "create_app"]

HERE = Path(__file__).resolve().parent
COOKIE_NAME = "kura_token"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
        "media-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
_STATUS_BY_ERROR: list[tuple[type[KuraError], int]] = [
    (NotFound, 404),
    (UsageError, 400),
    (InvalidInput, 422),
    (FileSystemError, 507),  # the disk refused the write (full, read-only): the page says why
    (StateConflict, 409),  # e.g. rating a run that never ran: the hint says what to run
]


def _templates() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["prompt_text"] = prompt_text
    env.filters["query"] = lambda params: urlencode(params)
    return env


def _http_status(error: KuraError) -> int:
    for kind, status in _STATUS_BY_ERROR:
        if isinstance(error, kind):
            return status
    return 500


def create_app(workspace: Workspace, token: str | None = None) -> FastAPI:
    """The site over ``workspace``; with ``token``, every request must present it."""
    app = FastAPI(title="Kura", docs_url=None, redoc_url=None, openapi_url=None)
    env = _templates()
    csrf_token = secrets.token_urlsafe(32)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    def page(name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(workspace=str(workspace.root), **context)
        return HTMLResponse(html, status_code=status_code)

    def refuse(status_code: int, message: str) -> HTMLResponse:
        return page("error.html", status_code, title="Refused", message=message, hint="")

    def refuse_form(request: Request, csrf: str) -> HTMLResponse | None:
        """The refusal of a POST sent from another site or without this server's CSRF
        token, or None when the form may act."""
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            return refuse(403, "the form was sent from another site")
        if not same_secret(csrf, csrf_token):
            return refuse(403, "the form's CSRF token is missing or stale; reload the page")
        return None

    @app.middleware("http")
    async def guard(request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await _check_access(request)
        if response is None:
            response = await call_next(request)
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    async def _check_access(request: Request) -> Response | None:
        if token is None:
            if not is_loopback_host_header(request.headers.get("host", "")):
                return refuse(400, "this server answers only to localhost addresses")
            return None
        offered = request.query_params.get("token")
        if offered is not None:
            if not same_secret(offered, token):
                return refuse(401, "that token is not the one this server was started with")
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            redirect = RedirectResponse(local_redirect(target), status_code=303)
            redirect.set_cookie(
                COOKIE_NAME, token, httponly=True, samesite="strict", path="/", max_age=86400
            )
            return redirect
        header = request.headers.get("authorization", "")
        given = header[7:] if header.lower().startswith("bearer ") else None
        if not same_secret(given or request.cookies.get(COOKIE_NAME), token):
            return refuse(401, "this server needs its token: open it once with ?token=TOKEN")
        return None

    @app.exception_handler(KuraError)
    async def kura_error(request: Request, error: KuraError) -> Response:
        status = _http_status(error)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": error.to_dict()}, status_code=status)
        return page(
            "error.html", status, title="Error", message=error.message, hint=error.hint or ""
        )

    @app.get("/", response_class=HTMLResponse)
    def run_list_page(number: int = Query(1, alias="page")) -> HTMLResponse:
        from kura.web.trials import shown_status, trial_of

        shown = run_list_page_of(workspace, number)
        runs = newest_first(shown.listing.runs)
        statuses = {
            run.id: shown_status(run.status, trial_of(workspace, run.id))
            if run.status == "cancelled"
            else run.status
            for run in runs
        }
        return page(
            "runs.html",
            title="Runs",
            runs=runs,
            damaged=shown.listing.damaged,
            page_of=shown,
            shown=statuses,
        )

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(run_id: str) -> HTMLResponse:
        from kura.web.trials import shown_status, trial_of

        check_name(run_id, "run")
        live = live_view(workspace, run_id)
        trial = trial_of(workspace, run_id)
        return page(
            "run.html",
            title=f"Run {run_id}",
            run=run_entry(workspace, run_id),
            live=live,
            trial=trial,
            shown_status=shown_status(live["display"]["status"], trial),
            plan_html=run_file_html(workspace, run_id, "plan.md"),
            notes_html=run_file_html(workspace, run_id, "notes.md"),
            csrf_token=csrf_token,
        )

    @app.get("/api/runs/{run_id}/status")
    def run_status_json(run_id: str) -> JSONResponse:
        from kura.web.trials import shown_status, trial_of

        check_name(run_id, "run")
        live = live_view(workspace, run_id)  # shared with the cache: changed on a copy
        trial = trial_of(workspace, run_id)
        display = {**live["display"], "status": shown_status(live["display"]["status"], trial)}
        return JSONResponse(json_safe({**live, "display": display}))

    @app.post("/runs/{run_id}/evaluate")
    def evaluate(
        request: Request,
        run_id: str,
        rating: str = Form(""),
        notes: str = Form(""),
        csrf: str = Form(""),
    ) -> Response:
        check_name(run_id, "run")
        refused = refuse_form(request, csrf)
        if refused is not None:
            return refused
        evaluate_run(
            workspace,
            run_id,
            rating=_rating(rating),
            notes=notes.replace("\r\n", "\n").strip() or None,
        )
        return RedirectResponse(f"/runs/{run_id}#notes", status_code=303)

    @app.post("/runs/{run_id}/cancel")
    def cancel_from_page(request: Request, run_id: str, csrf: str = Form("")) -> Response:
        """``kura run cancel`` from the run's page: the same library call, behind the
        same origin and CSRF checks as a rating."""
        check_name(run_id, "run")
        refused = refuse_form(request, csrf)
        if refused is not None:
            return refused
        cancel(workspace, run_id)
        return RedirectResponse(f"/runs/{run_id}#progress", status_code=303)

    @app.get("/runs/{run_id}/samples", response_class=HTMLResponse)
    def gallery(run_id: str) -> HTMLResponse:
        check_name(run_id, "run")
        samples = run_samples(workspace, run_id)
        return page("samples.html", title=f"Samples of {run_id}", samples=samples)

    @app.get("/compare", response_class=HTMLResponse)
    def compare(a: str = "", b: str = "") -> HTMLResponse:
        choices = _all_points(workspace)
        sides = [_side(workspace, text) for text in (a, b) if text]
        return page(
            "compare.html",
            title="Compare samples",
            a=a,
            b=b,
            choices=choices,
            sides=sides,
            rows=_compare_rows(sides) if len(sides) == 2 else [],
        )

    @app.get("/sweeps", response_class=HTMLResponse)
    def sweeps_page() -> HTMLResponse:
        from kura.web.sweeps import sweep_list  # Optuna and the sweep modules load here only

        return page("sweeps.html", title="Sweeps", sweeps=sweep_list(workspace))

    @app.get("/sweeps/{sweep_id}", response_class=HTMLResponse)
    def sweep_detail(sweep_id: str) -> HTMLResponse:
        from kura.web.sweeps import sweep_page

        check_name(sweep_id, "sweep")
        return page("sweep.html", title=f"Sweep {sweep_id}", page=sweep_page(workspace, sweep_id))

    @app.get("/knowledge", response_class=HTMLResponse)
    def knowledge() -> HTMLResponse:
        return page("knowledge.html", title="Knowledge", **knowledge_view(workspace))

    @app.get("/datasets", response_class=HTMLResponse)
    def datasets_page() -> HTMLResponse:
        from kura.web.datasets import dataset_index

        return page("datasets.html", title="Datasets", datasets=dataset_index(workspace))

    @app.get("/datasets/{name}", response_class=HTMLResponse)
    def dataset_detail(
        name: str, page_number: int = Query(1, alias="page"), problems: str = "", run: str = ""
    ) -> HTMLResponse:
        from kura.web.datasets import dataset_page, page_numbers

        check_name(name, "dataset")
        if run:
            check_name(run, "run")
        shown = dataset_page(
            workspace, name, page=page_number, only_problems=problems == "1", run=run or None
        )
        return page(
            "dataset.html", title=f"Dataset {name}", d=shown, page_numbers=page_numbers(shown)
        )

    @app.get("/files/{relative:path}")
    def media_file(relative: str) -> FileResponse:
        path = resolve_media(workspace.root, relative)
        return FileResponse(path, media_type=media_type(relative))

    return app


def _rating(text: str) -> int | None:
    if not text.strip():
        return None
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"rating {text!r} is not a number", hint="choose 1-5") from None


def _all_points(workspace: Workspace) -> list[tuple[str, str]]:
    """(value, label) of every run and sampled point, for the compare form."""
    choices = []
    for run_id in list_run_ids(workspace):
        for point in run_samples(workspace, run_id).points:
            choices.append((f"{run_id}:{point.key}", f"{run_id} — {point.label}"))
    return choices


def _side(workspace: Workspace, text: str) -> dict[str, Any]:
    run_id, point = parse_side(text)
    samples = run_samples(workspace, run_id)
    if point is None:
        if not samples.points:
            raise NotFound(f"run {run_id} has no samples yet")
        point = samples.points[-1]
    elif point not in samples.points:
        known = ", ".join(p.key for p in samples.points) or "none"
        raise NotFound(f"run {run_id} has no samples at {point.label}", hint=f"it has: {known}")
    return {"run": run_id, "point": point, "samples": samples, "cells": samples.at(point)}


def _compare_rows(sides: list[dict[str, Any]]) -> list[dict[str, Any]]:
    left, right = sides
    left_samples: RunSamples = left["samples"]
    right_samples: RunSamples = right["samples"]
    indices = sorted(set(left["cells"]) | set(right["cells"]))
    rows = []
    for index in indices:
        prompts = [left_samples.prompt(index), right_samples.prompt(index)]
        rows.append(
            {
                "index": index,
                "prompts": prompts if prompts[0] != prompts[1] else prompts[:1],
                "cells": [left["cells"].get(index), right["cells"].get(index)],
            }
        )
    return rows
