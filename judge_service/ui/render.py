"""Rendering a page: the Jinja2 templates in ui/templates (autoescape on, so whatever a caller sent is shown
as text), the security headers every page carries, and the CSRF cookie behind every form."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Request, Response
from fastapi.responses import HTMLResponse

from judge_service.api.middleware.auth import PAGES, cookie
from judge_service.api.middleware.session import CSRF_COOKIE, new_csrf_seed
from judge_service.schemas import AnswerResult

TEMPLATES = Path(__file__).resolve().parent / "templates"

# No script runs on these pages, and none may: a strict policy makes an escaping mistake harmless too.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.3f}" if abs(value) < 10 else f"{value:,.0f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _first_wrong(result: AnswerResult) -> dict[int, list[str]]:
    """Step -> the criteria whose marks name it as the first that went wrong (attribution "steps")."""
    wrong: dict[int, list[str]] = {}
    for name, mark in (result.criteria or {}).items():
        if mark.attribution is not None and mark.attribution.first_wrong_step is not None:
            wrong.setdefault(mark.attribution.first_wrong_step, []).append(name)
    return wrong


_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.globals.update(fmt=_fmt, pct=_pct, first_wrong=_first_wrong)


def render(name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    html = _env.get_template(name).render(**context)
    return HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)


def csrf_seed(request: Request) -> tuple[str, bool]:
    """The CSRF cookie's value, or a new one (True: to be set on the response)."""
    seed = cookie(request.scope, CSRF_COOKIE)
    return (seed, False) if seed else (new_csrf_seed(), True)


def set_csrf_cookie(request: Request, response: Response, seed: str) -> None:
    secure = request.url.scheme == "https"
    response.set_cookie(CSRF_COOKIE, seed, path=PAGES, httponly=True, samesite="strict", secure=secure)
