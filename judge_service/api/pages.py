"""The run pages (HTML) at /ui: runs, one run, one step, one judgement, and the sign-in.

Thin, like the JSON routes: every figure comes from the same service calls the JSON API makes (each
page links to its JSON), rendered by the Jinja2 templates in judge_service/ui/templates with
autoescape on, so whatever a caller sent (answers full of HTML and script, ids, reasons) is shown as
text. Pages read in pages: runs by cursor, a step's groups by cursor, a run's steps by range, so a run
of 1,000 steps or a step of 512 groups never loads whole.
"""

from __future__ import annotations

import math
from pathlib import Path as FilePath
from typing import Annotated, Any
from urllib.parse import urlencode

import jinja2
from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from judge_service.api.auth import PAGES, KeyRing, caller_of, cookie
from judge_service.api.deps import JudgementId, RunId, ServiceDep, StepNumber
from judge_service.errors import InvalidGroupError, NotFoundError
from judge_service.quality.agreement import agreement
from judge_service.quality.calibration import calibrate
from judge_service.quality.labels import ANONYMOUS, labels_for
from judge_service.quality.sources import run_agreement_report, run_groups
from judge_service.schemas import (
    MAX_STEP,
    MAX_STEPS_PAGE,
    RUN_ID_PATTERN,
    LabelsRequest,
    StepFigures,
    StoredJudgement,
)
from judge_service.service import JudgeService
from judge_service.ui.charts import Series, line_chart
from judge_service.ui.session import CSRF_COOKIE, SESSION_COOKIE, SESSION_S, new_csrf_seed

router = APIRouter(prefix="/ui", include_in_schema=False)

TEMPLATES = FilePath(__file__).resolve().parent.parent / "ui" / "templates"
GROUPS_PER_PAGE = 20
TABLE_STEPS = 100

MARK_FIELD = "mark:"  # the label form's field per answer: mark:<answer id>


def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.3f}" if abs(value) < 10 else f"{value:,.0f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.globals.update(fmt=_fmt, pct=_pct)


def _page(name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    html = _env.get_template(name).render(**context)
    return HTMLResponse(html, status_code=status_code, headers=_SECURITY_HEADERS)


# No script runs on these pages, and none may: a strict policy makes an escaping mistake harmless too.
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@router.get("", response_class=RedirectResponse)
@router.get("/", response_class=RedirectResponse)
async def ui_root() -> RedirectResponse:
    return RedirectResponse("/ui/runs", status_code=303)


@router.get("/runs", response_class=HTMLResponse)
async def runs_page(
    service: ServiceDep, cursor: Annotated[str | None, Query(pattern=RUN_ID_PATTERN)] = None
) -> HTMLResponse:
    page = await service.list_runs(limit=50, cursor=cursor)
    json_url = "/v1/runs" + (f"?{urlencode({'cursor': cursor})}" if cursor else "")
    return _page("runs.html", page=page, json_url=json_url)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run_page(
    run_id: RunId,
    service: ServiceDep,
    from_step: Annotated[str | None, Query(alias="from", max_length=20)] = None,
    to_step: Annotated[str | None, Query(alias="to", max_length=20)] = None,
    fingerprint: Annotated[str | None, Query(pattern=r"^([0-9a-f]{1,64})?$")] = None,
) -> HTMLResponse:
    # The filter form sends empty fields; they mean "no bound".
    first, last = _step_bound(from_step, "from"), _step_bound(to_step, "to")
    fingerprint = fingerprint or None
    summary = await service.run_summary(run_id)
    figures = await service.run_steps(
        run_id,
        after=-1 if first is None else first - 1,
        until=last,
        fingerprint=fingerprint,
        limit=MAX_STEPS_PAGE,
    )
    steps = figures.items
    calibration_step = steps[-1].step if steps else None
    calibration = None
    if calibration_step is not None:
        groups = await run_groups(service, run_id, step=calibration_step, fingerprint=fingerprint)
        calibration = calibrate(groups) if groups else None
    agreements = await run_agreement_report(service, run_id)
    query = {"from": first, "to": last, "fingerprint": fingerprint}
    next_range = urlencode(
        {k: v for k, v in {**query, "from": steps[-1].step + 1 if steps else None}.items() if v is not None}
    )
    json_query = {"from": first, "to": last, "fingerprint": fingerprint, "limit": MAX_STEPS_PAGE}
    return _page(
        "run.html",
        run_id=run_id,
        summary=summary,
        from_step=first,
        to_step=last,
        fingerprint=fingerprint,
        fingerprints=[f.fingerprint for f in (summary.fingerprints if summary else []) if f.fingerprint],
        steps=steps,
        table_steps=steps[-TABLE_STEPS:],
        truncated=figures.next_cursor is not None,
        next_range=next_range,
        charts=_charts(steps),
        calibration=calibration,
        calibration_step=calibration_step,
        agreements=agreements,
        json_url=f"/v1/runs/{run_id}/steps?"
        + urlencode({k: v for k, v in json_query.items() if v is not None}),
    )


def _step_bound(raw: str | None, name: str) -> int | None:
    if raw is None or raw.strip() == "":
        return None
    if not raw.strip().isdigit() or int(raw) > MAX_STEP:
        raise InvalidGroupError(f"'{name}' must be a step number (0 or more), got {raw[:20]!r}")
    return int(raw)


def _charts(steps: list[StepFigures]) -> list[dict[str, str]]:
    numbers = [s.step for s in steps]

    def chart(key: str, title: str, values: list[float | None], caption: str, **kw: Any) -> dict[str, str]:
        svg = line_chart(Series(title, numbers, values, **kw))
        return {"key": key, "title": title, "svg": svg, "caption": caption}

    return [
        chart(
            "mean_score",
            "Mean score",
            [s.mean_score for s in steps],
            "Mean score of the scored answers, with one standard deviation either side.",
            spread=[s.score_sd for s in steps],
            lower=0.0,
            upper=1.0,
        ),
        chart(
            "flat_share",
            "Flat groups",
            [s.flat_share for s in steps],
            "Share of groups whose answers all got the same score: no learning signal for GRPO.",
            lower=0.0,
            upper=1.0,
        ),
        chart(
            "unscored_share",
            "Unscored answers",
            [s.unscored_share for s in steps],
            "Share of answers the judge could not score (never counted as 0).",
            lower=0.0,
            upper=1.0,
        ),
        chart(
            "order_sensitivity",
            "Order sensitivity",
            [s.order_sensitivity for s in steps],
            "Mean spread of answers' scores across answer orders, where groups were judged under several.",
            lower=0.0,
        ),
        chart(
            "judge_tokens",
            "Judge tokens per group",
            [_tokens(s) for s in steps],
            "Prompt and completion tokens the judge spent per group.",
            lower=0.0,
            unit=" tokens",
        ),
        chart(
            "judge_ms",
            "Judge time per group",
            [s.judge_ms for s in steps],
            "Mean judge time per group, in milliseconds.",
            lower=0.0,
            unit=" ms",
        ),
    ]


def _tokens(step: StepFigures) -> float | None:
    if step.prompt_tokens is None and step.completion_tokens is None:
        return None
    return (step.prompt_tokens or 0) + (step.completion_tokens or 0)


@router.get("/runs/{run_id}/steps/{step}", response_class=HTMLResponse)
async def step_page(
    run_id: RunId,
    step: StepNumber,
    service: ServiceDep,
    sort: Annotated[str, Query(pattern=r"^(score|sent)$")] = "score",
    cursor: Annotated[str | None, Query(max_length=64)] = None,
) -> HTMLResponse:
    page = await service.list_run(run_id, step=step, limit=GROUPS_PER_PAGE, cursor=cursor)
    groups = []
    for item in page.items:
        stored = await service.get(item.judgement_id)  # the request: conversation, reference, answer texts
        old = await _original(service, stored)
        groups.append(_group_view(stored, old, sort))
    return _page(
        "step.html",
        run_id=run_id,
        step=step,
        groups=groups,
        sort=sort,
        next_cursor=page.next_cursor,
        cursor_param=f"&cursor={cursor}" if cursor else "",
        json_url=f"/v1/runs/{run_id}/judgements?" + urlencode({"step": step, "limit": GROUPS_PER_PAGE}),
    )


async def _original(service: JudgeService, stored: StoredJudgement) -> StoredJudgement | None:
    if stored.regrade_of is None:
        return None
    try:
        return await service.get(stored.regrade_of)
    except NotFoundError:  # the original may be gone; the regrade still shows
        return None


def _group_view(stored: StoredJudgement, old: StoredJudgement | None, sort: str) -> dict[str, Any]:
    answers = _answer_rows(stored, old=old, by_score=sort == "score")
    return {"judgement": stored, "request": stored.request, "answers": answers, "old": old}


def _answer_rows(
    stored: StoredJudgement, *, old: StoredJudgement | None = None, by_score: bool = False
) -> list[dict[str, Any]]:
    """Each answer's result with its text (and its score before a regrade); by score: best first, unscored
    last, where they stand out."""
    texts = {a.id: a.text for a in stored.request.answers}
    old_scores = {a.id: a.score for a in old.answers} if old is not None else {}
    results = list(stored.answers)
    if by_score:
        results.sort(key=lambda a: (a.score is None, -(a.score or 0.0)))
    return [{"result": a, "text": texts.get(a.id, ""), "old_score": old_scores.get(a.id)} for a in results]


@router.get("/judgements/{judgement_id}", response_class=HTMLResponse)
async def judgement_page(judgement_id: JudgementId, request: Request, service: ServiceDep) -> HTMLResponse:
    return await _judgement(request, service, judgement_id)


async def _judgement(
    request: Request,
    service: JudgeService,
    judgement_id: str,
    *,
    error: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    stored = await service.get(judgement_id)
    answers = _answer_rows(stored)
    labels = await service.labels_of(judgement_id)
    scores = {a.id: a.score for a in stored.answers}
    agreements = [(label, agreement([(label, scores)])) for label in labels]
    seed, fresh = _csrf_seed(request)
    keys: KeyRing = request.app.state.keys
    response = _page(
        "judgement.html",
        status_code=status_code,
        j=stored,
        answers=answers,
        labels=agreements,
        csrf=keys.sessions.csrf_token(seed),
        labeler=caller_of(request.scope) or ANONYMOUS,
        error=error,
        json_url=f"/v1/judgements/{judgement_id}",
    )
    if fresh:
        _set_csrf_cookie(request, response, seed)
    return response


@router.post("/judgements/{judgement_id}/labels", response_class=HTMLResponse)
async def save_labels(judgement_id: JudgementId, request: Request, service: ServiceDep) -> Response:
    """The "score it yourself" form: a 1-5 mark per answer (empty: not marked)."""
    form = await request.form()
    keys: KeyRing = request.app.state.keys
    if not keys.sessions.csrf_valid(cookie(request.scope, CSRF_COOKIE), str(form.get("csrf", ""))):
        return await _judgement(
            request, service, judgement_id, error="The form expired; send it again.", status_code=403
        )
    marks = {
        str(name)[len(MARK_FIELD) :]: str(value)
        for name, value in form.multi_items()
        if str(name).startswith(MARK_FIELD) and str(value).strip()
    }
    labeler = str(form.get("labeler", "")).strip() or caller_of(request.scope) or ANONYMOUS
    try:
        labels_request = LabelsRequest(
            human={answer_id: float(mark) for answer_id, mark in marks.items()},
            kind="score",
            scale=(1.0, 5.0),
            labeler=labeler,
        )
        judgement = await service.get(judgement_id)
        labels = labels_for(judgement, labels_request, labeler=labeler)
    except (ValueError, InvalidGroupError) as exc:
        message = "Give at least one answer a mark from 1 to 5" if not marks else _first_line(exc)
        return await _judgement(request, service, judgement_id, error=message, status_code=422)
    await service.save_labels(labels, run_id=judgement.run_id)
    return RedirectResponse(f"/ui/judgements/{judgement_id}#labels", status_code=303)


def _first_line(exc: Exception) -> str:
    text = exc.message if isinstance(exc, InvalidGroupError) else str(exc)
    return text.strip().splitlines()[0][:300]


def _csrf_seed(request: Request) -> tuple[str, bool]:
    """The CSRF cookie's value, or a new one (True: to be set on the response)."""
    seed = cookie(request.scope, CSRF_COOKIE)
    return (seed, False) if seed else (new_csrf_seed(), True)


def _set_csrf_cookie(request: Request, response: Response, seed: str) -> None:
    secure = request.url.scheme == "https"
    response.set_cookie(CSRF_COOKIE, seed, path=PAGES, httponly=True, samesite="strict", secure=secure)


# --------------------------------------------------------------------------- sign-in


@router.get("/signin", response_class=HTMLResponse)
async def signin_page(
    request: Request, next: Annotated[str, Query(max_length=2048)] = "/ui/runs"
) -> Response:
    return _signin(request, next_url=next)


@router.post("/signin", response_class=HTMLResponse)
async def signin(
    request: Request,
    key: Annotated[str, Form(max_length=4096)],
    csrf: Annotated[str, Form(max_length=256)] = "",
    next: Annotated[str, Form(max_length=2048)] = "/ui/runs",
) -> Response:
    keys: KeyRing = request.app.state.keys
    if not keys.sessions.csrf_valid(cookie(request.scope, CSRF_COOKIE), csrf):
        return _signin(request, next_url=next, error="The form expired; sign in again.", status_code=403)
    caller = keys.caller_for(key.strip()) if keys.enabled else None
    if caller is None:
        return _signin(request, next_url=next, error="That key is not valid.", status_code=401)
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        keys.sessions.issue(caller),
        max_age=SESSION_S,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def _signin(request: Request, *, next_url: str, error: str | None = None, status_code: int = 200) -> Response:
    keys: KeyRing = request.app.state.keys
    seed, fresh = _csrf_seed(request)
    response = _page(
        "signin.html",
        status_code=status_code,
        csrf=keys.sessions.csrf_token(seed),
        next=_safe_next(next_url),
        error=error,
        hours=SESSION_S // 3600,
    )
    if fresh:
        _set_csrf_cookie(request, response, seed)
    return response


def _safe_next(target: str) -> str:
    """Only a page of this service: never another site (an open redirect)."""
    if target.startswith("/ui/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui/runs"
