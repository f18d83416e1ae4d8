"""Sign-in to the run pages when API keys are on: a key in a form (CSRF-checked) becomes a signed HttpOnly
session cookie (api/middleware/session.py) that the auth middleware accepts on /ui."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from judge_service.api.deps import KeysDep
from judge_service.api.middleware.auth import cookie
from judge_service.api.middleware.keys import KeyRing, Scope
from judge_service.api.middleware.session import CSRF_COOKIE, SESSION_COOKIE, SESSION_S
from judge_service.ui.render import csrf_seed, render, set_csrf_cookie

router = APIRouter(prefix="/ui", include_in_schema=False)


@router.get("/signin", response_class=HTMLResponse)
async def signin_page(
    request: Request, keys: KeysDep, next: Annotated[str, Query(max_length=2048)] = "/ui/runs"
) -> Response:
    return _signin(request, keys, next_url=next)


@router.post("/signin", response_class=HTMLResponse)
async def signin(
    request: Request,
    keys: KeysDep,
    key: Annotated[str, Form(max_length=4096)],
    csrf: Annotated[str, Form(max_length=256)] = "",
    next: Annotated[str, Form(max_length=2048)] = "/ui/runs",
) -> Response:
    if not keys.sessions.csrf_valid(cookie(request.scope, CSRF_COOKIE), csrf):
        return _signin(
            request, keys, next_url=next, error="The form expired; sign in again.", status_code=403
        )
    principal = keys.principal_for(key.strip()) if keys.enabled else None
    if principal is None:
        return _signin(request, keys, next_url=next, error="That key is not valid.", status_code=401)
    if not principal.may(Scope.READ):
        error = f"The key {principal.name!r} lacks the scope 'read' the pages need."
        return _signin(request, keys, next_url=next, error=error, status_code=403)
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        keys.sessions.issue(principal.name),
        max_age=SESSION_S,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def _signin(
    request: Request, keys: KeyRing, *, next_url: str, error: str | None = None, status_code: int = 200
) -> Response:
    seed, fresh = csrf_seed(request)
    response = render(
        "signin.html",
        status_code=status_code,
        csrf=keys.sessions.csrf_token(seed),
        next=_safe_next(next_url),
        error=error,
        hours=SESSION_S // 3600,
    )
    if fresh:
        set_csrf_cookie(request, response, seed)
    return response


def _safe_next(target: str) -> str:
    """Only a page of this service: never another site (an open redirect)."""
    if target.startswith("/ui/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui/runs"
