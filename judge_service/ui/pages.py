"""The run pages (HTML) at /ui: runs, one run, one step, one judgement (sign-in: signin.py).

Thin, like the JSON routes: every figure comes from the same service calls the JSON API makes (each
page links to its JSON), rendered by render.py from the Jinja2 templates in ui/templates with
autoescape on, so whatever a caller sent (answers full of HTML and script, ids, reasons) is shown as
text. Pages read in pages: runs by cursor, a step's groups by cursor, a run's steps by range, so a run
of 1,000 steps or a step of 512 groups never loads whole.
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from judge_service.api.deps import JudgementId, KeysDep, RunId, ServiceDep, StepNumber
from judge_service.api.middleware.auth import caller_of, cookie, principal_of
from judge_service.api.middleware.keys import KeyRing, Scope
from judge_service.api.middleware.session import CSRF_COOKIE
from judge_service.errors import ForbiddenError, InvalidGroupError, JudgeServiceError, NotFoundError
from judge_service.quality.agreement import agreement
from judge_service.quality.calibration import calibrate
from judge_service.quality.labels import ANONYMOUS, labeler_for, labels_for
from judge_service.quality.sources import run_agreement_report, run_groups
from judge_service.schemas import MAX_STEP, MAX_STEPS_PAGE, RUN_ID_PATTERN, LabelsRequest, StoredJudgement
from judge_service.service import JudgeService
from judge_service.ui.render import csrf_seed, render, set_csrf_cookie
from judge_service.ui.views import answer_rows, charts, group_view, win_matrix

router = APIRouter(prefix="/ui", include_in_schema=False)

GROUPS_PER_PAGE = 20
TABLE_STEPS = 100

MARK_FIELD = "mark:"  # the label form's field per answer: mark:<answer id>


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
    return render("runs.html", page=page, json_url=json_url)


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
    return render(
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
        charts=charts(steps, figures.audit),
        audit=figures.audit,
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


@router.get("/runs/{run_id}/steps/{step}", response_class=HTMLResponse)
async def step_page(
    run_id: RunId,
    step: StepNumber,
    request: Request,
    service: ServiceDep,
    keys: KeysDep,
    sort: Annotated[str, Query(pattern=r"^(score|sent)$")] = "score",
    cursor: Annotated[str | None, Query(max_length=64)] = None,
) -> HTMLResponse:
    page = await service.list_run(run_id, step=step, limit=GROUPS_PER_PAGE, cursor=cursor)
    groups = []
    for item in page.items:
        stored = await service.get(item.judgement_id)  # the request: conversation, reference, answer texts
        old = await _original(service, stored)
        groups.append(group_view(stored, old, sort))
    seed, fresh = csrf_seed(request)
    response = render(
        "step.html",
        run_id=run_id,
        step=step,
        groups=groups,
        sort=sort,
        next_cursor=page.next_cursor,
        cursor_param=f"&cursor={cursor}" if cursor else "",
        json_url=f"/v1/runs/{run_id}/judgements?" + urlencode({"step": step, "limit": GROUPS_PER_PAGE}),
        csrf=keys.sessions.csrf_token(seed),
        back=request.url.path + (f"?{request.url.query}" if request.url.query else ""),
    )
    if fresh:
        set_csrf_cookie(request, response, seed)
    return response


async def _original(service: JudgeService, stored: StoredJudgement) -> StoredJudgement | None:
    if stored.regrade_of is None:
        return None
    try:
        return await service.get(stored.regrade_of)
    except NotFoundError:  # the original may be gone; the regrade still shows
        return None


@router.get("/judgements/{judgement_id}", response_class=HTMLResponse)
async def judgement_page(
    judgement_id: JudgementId, request: Request, service: ServiceDep, keys: KeysDep
) -> HTMLResponse:
    return await _judgement(request, service, keys, judgement_id)


async def _judgement(
    request: Request,
    service: JudgeService,
    keys: KeyRing,
    judgement_id: str,
    *,
    error: str | None = None,
    error_explain: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    stored = await service.get(judgement_id)
    answers = answer_rows(stored)
    labels = await service.labels_of(judgement_id)
    scores = {a.id: a.score for a in stored.answers}
    agreements = [(label, agreement([(label, scores)])) for label in labels]
    seed, fresh = csrf_seed(request)
    response = render(
        "judgement.html",
        status_code=status_code,
        j=stored,
        answers=answers,
        matrix=win_matrix(stored),
        labels=agreements,
        csrf=keys.sessions.csrf_token(seed),
        labeler=caller_of(request.scope) or ANONYMOUS,
        labeler_fixed=not _may_name_labeler(request),
        error=error,
        error_explain=error_explain,
        json_url=f"/v1/judgements/{judgement_id}",
    )
    if fresh:
        set_csrf_cookie(request, response, seed)
    return response


@router.post("/judgements/{judgement_id}/labels", response_class=HTMLResponse)
async def save_labels(
    judgement_id: JudgementId, request: Request, service: ServiceDep, keys: KeysDep
) -> Response:
    """The "score it yourself" form: a 1-5 mark per answer (empty: not marked)."""
    form = await request.form()
    if not keys.sessions.csrf_valid(cookie(request.scope, CSRF_COOKIE), str(form.get("csrf", ""))):
        return await _judgement(
            request, service, keys, judgement_id, error="The form expired; send it again.", status_code=403
        )
    marks = {
        str(name)[len(MARK_FIELD) :]: str(value)
        for name, value in form.multi_items()
        if str(name).startswith(MARK_FIELD) and str(value).strip()
    }
    principal = principal_of(request.scope)
    try:
        labeler = labeler_for(
            str(form.get("labeler", "")).strip() or None,
            None if principal is None else principal.name,
            admin=_may_name_labeler(request),
        )
    except ForbiddenError as exc:
        return await _judgement(request, service, keys, judgement_id, error=exc.message, status_code=403)
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
        return await _judgement(request, service, keys, judgement_id, error=message, status_code=422)
    await service.save_labels(labels, run_id=judgement.run_id)
    return RedirectResponse(f"/ui/judgements/{judgement_id}#labels", status_code=303)


def _may_name_labeler(request: Request) -> bool:
    """Keys off, or an admin key: the form's name field may name anyone (quality/labels.py)."""
    principal = principal_of(request.scope)
    return principal is None or principal.may(Scope.ADMIN)


@router.post("/judgements/{judgement_id}/reasons", response_class=HTMLResponse)
async def explain(
    judgement_id: JudgementId, request: Request, service: ServiceDep, keys: KeysDep
) -> Response:
    """The Explain button: the judge writes reasons for a marks-only judgement's marks (POST
    /v1/judgements/{id}/reasons); back to the page the button was on."""
    form = await request.form()
    if not keys.sessions.csrf_valid(cookie(request.scope, CSRF_COOKIE), str(form.get("csrf", ""))):
        message = "The form expired; send it again."
        return await _judgement(request, service, keys, judgement_id, error_explain=message, status_code=403)
    try:
        await service.explain(judgement_id)
    except NotFoundError:
        raise
    except JudgeServiceError as exc:
        return await _judgement(
            request, service, keys, judgement_id, error_explain=exc.message, status_code=exc.http_status
        )
    return RedirectResponse(_back(str(form.get("back", "")), judgement_id), status_code=303)


def _back(back: str, judgement_id: str) -> str:
    """Where the Explain form came from, if it is one of these pages; else the judgement's page."""
    if _PAGE_PATH.fullmatch(back):
        return back
    return f"/ui/judgements/{judgement_id}#answers"


# A run page of this service, with its query and anchor: never another site, nor a scheme-relative URL.
_PAGE_PATH = re.compile(
    r"/ui/(?:runs|judgements)/[A-Za-z0-9_.:/\-]*(?:\?[A-Za-z0-9_=&%.:-]*)?(?:#[A-Za-z0-9_-]*)?"
)


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and exc.errors():  # its first line only names the model
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"[:300]
    text = exc.message if isinstance(exc, InvalidGroupError) else str(exc)
    return text.strip().splitlines()[0][:300]
