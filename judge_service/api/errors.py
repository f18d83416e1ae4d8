"""The one mapping from exceptions to HTTP responses. Every error body is an ErrorResponse."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge_service.errors import JudgeServiceError

log = logging.getLogger(__name__)

_UNPARSABLE_BODY = "There was an error parsing the body"


def error_response(
    status: int, code: str, message: str, details: Any = None, headers: Any = None
) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": details}}
    return JSONResponse(status_code=status, content=body, headers=headers)


def _location(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body",)]
    return ".".join(parts) or "body"


async def _service_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, JudgeServiceError)
    retry_after = getattr(exc, "retry_after_s", None)  # OverloadedError, ShuttingDownError
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return error_response(exc.http_status, exc.code, exc.message, exc.details or None, headers)


MAX_PROBLEMS = 50  # a body of 400,000 unknown keys has as many problems: the reply names the first ones


def capped(errors: list[Any]) -> list[Any]:
    """The first MAX_PROBLEMS of a request's errors and one saying how many more there were; all of them
    when that would be no shorter."""
    if len(errors) <= MAX_PROBLEMS + 1:
        return errors
    more = {"loc": (), "msg": f"and {len(errors) - MAX_PROBLEMS:,} more problems, not listed", "type": "more"}
    return [*errors[:MAX_PROBLEMS], more]


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = capped(list(exc.errors()))  # JSONRoute's come capped already (json_route.py)
    problems = [
        {"field": _location(tuple(err.get("loc", ()))), "problem": err.get("msg", "invalid")}
        for err in errors
    ]
    summary = "; ".join(f"{p['field']}: {p['problem']}" for p in problems[:5])
    return error_response(422, "invalid_request", f"the request is invalid: {summary}", problems)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and exc.detail == _UNPARSABLE_BODY:
        # FastAPI's answer to a body it cannot decode (e.g. not UTF-8); malformed JSON is already 422.
        return error_response(
            422, "invalid_request", "the request body could not be read: send JSON encoded as UTF-8"
        )
    code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail), headers=getattr(exc, "headers", None))


async def _unexpected_error(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error", exc_info=exc)
    return error_response(500, "internal", "internal error; the request was not judged")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(JudgeServiceError, _service_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected_error)
