"""What a person sees on the run pages, in chromium: runs, one run's charts and calibration, a step's
groups with marks and reasons, one judgement in full, paging and sorting, caller text shown as text,
and the sign-in when API keys are on."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from judge_service.backends.fake import MARK_ANSWER, MARK_BY_MODEL, THINK_FOREVER, WRONG_STEP
from tests.pages.conftest import (
    API_KEY,
    BUSY_GROUPS,
    BUSY_STEP,
    GROUPS_PER_STEP,
    HOSTILE,
    RUN,
    STEPS,
    screenshot_dir,
)
from tests.scaleout.processes import FakeEngine
from tests.service_process import ServiceProcess


def test_the_runs_page_lists_the_run_with_its_totals(
    page: Page, filled: dict[str, Any], tmp_path: Path
) -> None:
    page.goto(f"{filled['url']}/ui/runs")
    row = page.locator("#runs tbody tr", has_text=RUN)
    expect(row).to_have_count(1)
    cells = row.locator("td")
    expect(cells.nth(1)).to_have_text(str(STEPS))
    groups = STEPS * GROUPS_PER_STEP + (BUSY_GROUPS - GROUPS_PER_STEP) + 1  # + the regraded group
    expect(cells.nth(2)).to_have_text(str(groups))
    expect(cells.nth(4)).to_have_text(str(STEPS - 1))
    assert row.locator(".pill").count() >= 2  # orders=1 and orders=2 groups: two grader fingerprints
    page.screenshot(path=str(screenshot_dir(tmp_path) / "runs.png"))
    row.locator("a").click()
    expect(page.locator("#run-id")).to_have_text(RUN)


def test_the_run_page_plots_every_step_and_filters_by_range(
    page: Page, filled: dict[str, Any], tmp_path: Path
) -> None:
    page.goto(f"{filled['url']}/ui/runs/{RUN}")
    charts = page.locator("#charts figure")
    expect(charts).to_have_count(8)
    for key in ("mean_score", "flat_share", "unscored_share", "judge_tokens", "judge_ms"):
        expect(page.locator(f'figure[data-chart="{key}"] circle.point')).to_have_count(STEPS)
    # The run watch: a canary in every step, and answers of different lengths in every group.
    for key in ("canary_outrank_share", "length_bias"):
        points = page.locator(f'figure[data-chart="{key}"] circle.point')
        expect(points).to_have_count(STEPS)
        steps = httpx.get(f"{filled['url']}/v1/runs/{RUN}/steps").json()["items"]
        assert [float(v or "nan") for v in points.evaluate_all("ps => ps.map(p => p.dataset.value)")] == [
            pytest.approx(s[key]) for s in steps
        ]
    expect(page.locator('figure[data-chart="canary_outrank_share"] figcaption')).to_contain_text("By kind")
    expect(page.locator('figure[data-chart="mean_score"] polygon.band')).to_have_count(1)
    # Order sensitivity exists only where a group was judged under two orders: every step has one.
    expect(page.locator('figure[data-chart="order_sensitivity"] circle.point')).to_have_count(STEPS)
    # The unscored answer of step 2 shows as a point above 0 on the unscored chart.
    unscored = page.locator('figure[data-chart="unscored_share"] circle.point[data-step="2"]')
    assert float(unscored.get_attribute("data-value") or 0) > 0
    expect(page.locator("#calibration")).to_contain_text("Recommended pass threshold")
    expect(page.locator("#steps tbody tr")).to_have_count(STEPS)
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.screenshot(path=str(screenshot_dir(tmp_path) / "run-page.png"), full_page=False)

    page.fill('input[name="from"]', "3")
    page.fill('input[name="to"]', "5")
    page.click("#filters button")
    expect(page.locator('figure[data-chart="mean_score"] circle.point')).to_have_count(3)
    expect(page.locator("#steps tbody tr")).to_have_count(3)
    fingerprint = page.locator('select[name="fingerprint"] option').nth(1).get_attribute("value")
    page.select_option('select[name="fingerprint"]', fingerprint)
    page.click("#filters button")
    expect(page.locator("#steps tbody tr")).to_have_count(3)
    assert f"fingerprint={fingerprint}" in page.url


def test_a_step_shows_every_answer_with_marks_and_reasons_sorted_and_paged(
    page: Page, filled: dict[str, Any], tmp_path: Path
) -> None:
    page.goto(f"{filled['url']}/ui/runs/{RUN}/steps/{BUSY_STEP}")
    groups = page.locator("section.group")
    expect(groups).to_have_count(20)  # a page of groups, not all 25
    first = groups.first
    scores = [
        float(s) for s in first.locator("tr.answer").evaluate_all("rows => rows.map(r => r.dataset.score)")
    ]
    assert scores == sorted(scores, reverse=True)  # by score, best first
    expect(first.locator(".mark").first).to_contain_text("scripted mark for")  # the judge's reason
    expect(first.locator("tr.answer .mark")).to_have_count(5 * 4)  # 5 answers x 4 criteria
    # The hostile answer is shown as text: its markup visible, nothing executed (the page fixture
    # fails the test on any dialog), no <img> element made from it.
    expect(first.locator('tr[data-answer="html"] .text')).to_contain_text('<script>alert("x")</script>')
    assert first.locator('tr[data-answer="html"] img').count() == 0
    page.screenshot(path=str(screenshot_dir(tmp_path) / "step.png"))
    page.click("a[rel=next]")
    expect(page.locator("section.group")).to_have_count(BUSY_GROUPS - 20)
    page.goto(f"{filled['url']}/ui/runs/{RUN}/steps/{BUSY_STEP}?sort=sent")
    order = (
        page.locator("section.group")
        .first.locator("tr.answer")
        .evaluate_all("rows => rows.map(r => r.dataset.answer)")
    )
    assert order == ["good", "html", "short", "wrong", f"extra-{BUSY_STEP}-0"]


def test_an_unscored_answer_stands_out_with_its_error(page: Page, filled: dict[str, Any]) -> None:
    page.goto(f"{filled['url']}/ui/runs/{RUN}/steps/2")
    unscored = page.locator("tr.answer.unscored")
    expect(unscored).to_have_count(1)
    expect(unscored.locator(".error")).to_contain_text("unscored:")
    assert unscored.evaluate("row => getComputedStyle(row).backgroundColor") != "rgba(0, 0, 0, 0)"
    # Sorted by score, the unscored answer comes last in its group.
    group = page.locator("section.group", has=unscored)
    expect(group.locator("tr.answer").last).to_have_class("answer unscored")


def test_a_regraded_group_shows_old_and_new_scores(page: Page, filled: dict[str, Any]) -> None:
    old_id, new_id = filled["regraded"]
    page.goto(f"{filled['url']}/ui/runs/{RUN}/steps/0")
    regraded = page.locator(f"#group-{new_id}")
    expect(regraded).to_contain_text(f"regrade of {old_id[:8]}")
    expect(regraded.locator("td.old-score")).to_have_count(5)
    old = httpx.get(f"{filled['url']}/v1/judgements/{old_id}").json()
    shown = regraded.locator('tr[data-answer="good"] td.old-score').inner_text()
    assert shown == f"{old['answers'][0]['score']:.3f}"


def test_a_judgement_page_shows_everything_stored(page: Page, filled: dict[str, Any], tmp_path: Path) -> None:
    judgement_id = filled["ids"][1]  # a group judged under two orders
    stored = httpx.get(f"{filled['url']}/v1/judgements/{judgement_id}").json()
    page.goto(f"{filled['url']}/ui/judgements/{judgement_id}")
    expect(page.locator("#orders li")).to_have_count(2)
    expect(page.locator(".raw")).to_have_count(len(stored["raw_outputs"]))
    expect(page.locator(".raw .text").first).to_have_text(stored["raw_outputs"][0])
    expect(page.locator("main")).to_contain_text(stored["grader_fingerprint"])
    expect(page.locator('tr[data-answer="html"] .text')).to_have_text(HOSTILE)
    page.screenshot(path=str(screenshot_dir(tmp_path) / "judgement.png"), full_page=True)
    page.click(f'a[href="/v1/judgements/{judgement_id}"]')
    assert f"/v1/judgements/{judgement_id}" in page.url


def test_with_api_keys_the_pages_need_a_sign_in_and_keep_the_key_out_of_urls(page: Page, keyed: str) -> None:
    page.goto(f"{keyed}/ui/runs")
    expect(page).to_have_url(f"{keyed}/ui/signin?next=%2Fui%2Fruns")
    page.fill('input[name="key"]', "not-the-key")
    page.click("button[type=submit]")
    expect(page.locator(".error")).to_have_text("That key is not valid.")
    page.fill('input[name="key"]', API_KEY)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{keyed}/ui/runs")
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    assert API_KEY not in page.url
    (session,) = [c for c in page.context.cookies() if c["name"] == "judge_session"]
    assert session["httpOnly"] and session["sameSite"] == "Strict" and session["path"] == "/ui"
    assert API_KEY not in session["value"]
    # The JSON routes keep bearer tokens: the session cookie opens no API route.
    cookie = {"judge_session": session["value"]}
    assert httpx.get(f"{keyed}/v1/runs", cookies=cookie).status_code == 401
    assert httpx.get(f"{keyed}/ui/runs", cookies=cookie).status_code == 200
    forged = session["value"][:-2] + ("AA" if not session["value"].endswith("AA") else "BB")
    assert (
        httpx.get(f"{keyed}/ui/runs", cookies={"judge_session": forged}, follow_redirects=False).status_code
        == 303
    )


def test_a_sign_in_from_another_site_is_refused(keyed: str) -> None:
    """No CSRF token (a form posted from elsewhere): 403, no session."""
    reply = httpx.post(
        f"{keyed}/ui/signin", data={"key": API_KEY, "next": "/ui/runs"}, follow_redirects=False
    )
    assert reply.status_code == 403 and "judge_session" not in reply.cookies


def test_a_person_marks_a_group_by_clicks_and_the_run_page_shows_the_agreement(
    page: Page, filled: dict[str, Any], tmp_path: Path
) -> None:
    judgement_id = filled["ids"][3]  # step 1, first group
    stored = httpx.get(f"{filled['url']}/v1/judgements/{judgement_id}").json()
    by_score = sorted(stored["answers"], key=lambda a: a["score"], reverse=True)
    page.goto(f"{filled['url']}/ui/judgements/{judgement_id}")
    page.fill('input[name="labeler"]', "browser-person")
    # The person's marks follow the grader's order exactly: 5, 4, 3, 2, 1 from best to worst.
    for mark, answer in zip((5, 4, 3, 2, 1), by_score, strict=True):
        page.select_option(f'select[name="mark:{answer["id"]}"]', str(mark))
    page.click("#label-form button[type=submit]")
    row = page.locator('#stored-labels tr[data-labeler="browser-person"]')
    expect(row).to_have_count(1)
    scores = [a["score"] for a in by_score]
    ties = len(set(scores)) < len(scores)
    tau = float(row.locator("td.tau").inner_text())
    assert tau == 1.0 or ties  # the same order as the grader's (a grader tie lowers tau-b below 1)
    labels = httpx.get(f"{filled['url']}/v1/judgements/{judgement_id}/labels").json()["items"]
    assert labels[0]["labeler"] == "browser-person" and labels[0]["scale"] == [1.0, 5.0]
    page.screenshot(path=str(screenshot_dir(tmp_path) / "labels.png"))

    page.goto(f"{filled['url']}/ui/runs/{RUN}")
    agreement = page.locator(f'#agreement tr[data-fingerprint="{stored["grader_fingerprint"]}"]')
    expect(agreement).to_have_count(1)
    expect(agreement.locator("td.accuracy")).not_to_have_text("–")
    agreement.locator("a.worst").first.click()
    assert page.url.endswith("#labels")


def test_a_label_form_without_its_token_changes_nothing(filled: dict[str, Any]) -> None:
    judgement_id = filled["ids"][4]
    reply = httpx.post(
        f"{filled['url']}/ui/judgements/{judgement_id}/labels", data={"mark:good": "5", "labeler": "forger"}
    )
    assert reply.status_code == 403
    assert httpx.get(f"{filled['url']}/v1/judgements/{judgement_id}/labels").json()["items"] == []


def test_a_german_group_renders_with_its_figures_and_what_they_were_read_as(
    page: Page, filled: dict[str, Any], tmp_path: Path
) -> None:
    group = {
        "conversation": [{"role": "user", "content": "Wie viel kostet die Jahreslizenz für das Team?"}],
        "reference": "Die Jahreslizenz kostet 1.250 € für 12.500 Plätze.",
        "answers": [
            {"id": "richtig", "text": "Sie kostet 1250 Euro für 12500 Plätze – günstig!"},
            {"id": "falsch", "text": "Sie kostet 1,25 Euro für 12,5 Plätze."},
        ],
        "grader": "judge+numbers",
        "run_id": "deutscher-lauf",
        "step": 0,
    }
    judged = httpx.post(f"{filled['url']}/v1/judge", json=group, timeout=30).json()
    page.goto(f"{filled['url']}/ui/judgements/{judged['judgement_id']}")
    expect(page.locator('tr[data-answer="richtig"] .text')).to_have_text(group["answers"][0]["text"])
    expect(page.locator("main")).to_contain_text("Wie viel kostet die Jahreslizenz für das Team?")
    expect(page.locator('tr.answer[data-answer="richtig"]')).to_contain_text("1.250 € (=1,250)~1250 Euro")
    wrong = page.locator('tr.answer[data-answer="falsch"]')
    expect(wrong).to_contain_text("0/2 figures within 1%: 1.250 € (=1,250)≠12,5")
    page.screenshot(path=str(screenshot_dir(tmp_path) / "german.png"), full_page=True)


def test_a_code_graders_explanation_fields_show_as_text(page: Page, filled: dict[str, Any]) -> None:
    group = {
        "conversation": [{"role": "user", "content": "Which plan includes SSO?"}],
        "reference": "Business",
        "answers": [{"id": "right", "text": "The Business plan."}, {"id": "wrong", "text": "Starter."}],
        "grader": "verl-match",
        "item": {"data_source": HOSTILE[:80]},  # caller text inside a field: shown, never run
        "run_id": "code-fields",
        "step": 0,
    }
    judged = httpx.post(f"{filled['url']}/v1/judge", json=group, timeout=30).json()
    page.goto(f"{filled['url']}/ui/judgements/{judged['judgement_id']}")
    wrong = page.locator('tr.answer[data-answer="wrong"]')
    expect(wrong).to_contain_text("verl-match")
    expect(wrong.locator(".details")).to_contain_text("found: false")
    expect(wrong.locator(".details")).to_contain_text('data_source: <script>alert("x")</script>')


def test_a_thinking_judges_thinking_is_folded_beside_each_attempt(page: Page, filled: dict[str, Any]) -> None:
    group = {
        "conversation": [{"role": "user", "content": f"Which plan includes SSO? {THINK_FOREVER}"}],
        "reference": "Business",
        "answers": [{"id": "a", "text": "Business."}, {"id": "b", "text": HOSTILE[:60]}],
        "thinking": "on",
        "run_id": "thinking-pages",
        "step": 0,
    }
    judged = httpx.post(f"{filled['url']}/v1/judge", json=group, timeout=30).json()
    assert judged["status"] == "ok"  # the first attempt never ended its thinking; the retry did
    page.goto(f"{filled['url']}/ui/judgements/{judged['judgement_id']}")
    folded = page.locator(".raw details.thinking")
    expect(folded).to_have_count(2)
    expect(folded.first.locator("summary")).to_contain_text("never ended (length)")
    expect(folded.nth(1).locator("summary")).to_contain_text("of a budget of")
    text = folded.nth(1).locator(".text")
    expect(text).to_be_hidden()  # folded until opened
    folded.nth(1).locator("summary").click()
    expect(text).to_be_visible()
    expect(text).to_contain_text('Draft: {"mark": 1')
    # The reply beside it is the JSON alone.
    expect(page.locator(".raw > .text").nth(1)).not_to_contain_text("Draft")


def test_a_judgement_page_shows_its_canary_apart_from_the_answers(page: Page, filled: dict[str, Any]) -> None:
    judgement_id = filled["ids"][3]  # step 1, the group with a canary
    stored = httpx.get(f"{filled['url']}/v1/judgements/{judgement_id}").json()
    (canary,) = stored["canaries"]
    page.goto(f"{filled['url']}/ui/judgements/{judgement_id}")
    kind, canary_id = canary["kind"], canary["id"]
    row = page.locator(f'#canaries tr[data-kind="{kind}"]')
    expect(row).to_have_count(1)
    expect(row.locator(".outranked")).to_have_text("yes" if canary["outranked"] else "no")
    expect(page.locator("#orders li").first).not_to_contain_text(canary_id)  # the orders are the caller's
    expect(page.locator(f'[data-answer="{canary_id}"]')).to_have_count(0)


def test_the_explain_button_has_the_judge_write_reasons_for_marks_only_groups(
    page: Page, filled: dict[str, Any], tmp_path: Path
) -> None:
    groups = [
        {
            "conversation": [{"role": "user", "content": f"How do I export report {i}?"}],
            "reference": "Open it, click Export and pick PDF.",
            "answers": [
                {"id": "good", "text": "Click Export, then PDF."},
                {"id": "bad", "text": "Print it."},
            ],
            "run_id": "marks-only",
            "step": 0,
            "reasons": "none",
        }
        for i in range(2)
    ]
    ids = [
        r["judgement"]["judgement_id"]
        for r in httpx.post(f"{filled['url']}/v1/judge/batch", json={"groups": groups}, timeout=30).json()[
            "results"
        ]
    ]
    # On the judgement page: marks only, then the button, then the judge's reasons beside each mark.
    page.goto(f"{filled['url']}/ui/judgements/{ids[0]}")
    good = page.locator('tr.answer[data-answer="good"]')
    expect(good.locator(".no-reason")).to_have_count(4)
    page.locator("form.explain button").click()
    expect(page).to_have_url(f"{filled['url']}/ui/judgements/{ids[0]}#answers")
    expect(good.locator(".reason.explained")).to_have_count(4)
    expect(good.locator(".no-reason")).to_have_count(0)
    expect(page.locator("form.explain")).to_have_count(0)
    expect(page.locator(".explained-note")).to_contain_text("Reasons written after the marks")
    stored = httpx.get(f"{filled['url']}/v1/judgements/{ids[0]}").json()
    expect(good.locator(".reason.explained").first).to_have_text(
        stored["explained"]["answers"]["good"]["correctness"]
    )
    page.screenshot(path=str(screenshot_dir(tmp_path) / "explained.png"), full_page=True)
    # On the step page: one button per marks-only group; it brings the reader back to the group.
    page.goto(f"{filled['url']}/ui/runs/marks-only/steps/0")
    expect(page.locator("form.explain")).to_have_count(1)
    page.locator(f"#group-{ids[1]} form.explain button").click()
    expect(page).to_have_url(f"{filled['url']}/ui/runs/marks-only/steps/0#group-{ids[1]}")
    expect(page.locator(f"#group-{ids[1]} .reason.explained")).to_have_count(8)
    expect(page.locator("form.explain")).to_have_count(0)


def test_an_explain_form_without_its_token_writes_nothing(filled: dict[str, Any]) -> None:
    group = {
        "conversation": [{"role": "user", "content": "How do I rename a report?"}],
        "reference": "Click its title and type.",
        "answers": [{"id": "a", "text": "Click the title."}],
        "reasons": "none",
    }
    judged = httpx.post(f"{filled['url']}/v1/judge", json=group, timeout=30).json()
    url = f"{filled['url']}/ui/judgements/{judged['judgement_id']}/reasons"
    forged = httpx.post(url, data={"back": "https://elsewhere.example/"}, follow_redirects=False)
    assert forged.status_code == 403
    assert httpx.get(f"{filled['url']}/v1/judgements/{judged['judgement_id']}").json()["explained"] is None


def test_the_pages_show_the_rubric_and_which_items_each_answer_met(
    page: Page, filled: dict[str, Any], tmp_path: Path
) -> None:
    group = {
        "conversation": [{"role": "user", "content": "Tom has 5 apples and buys 13 more. How many has he?"}],
        "reference": "5 + 13 = 18. He has 18 apples.",
        "answers": [
            {"id": "right", "text": f"{MARK_ANSWER.format(5)} 5 + 13 = 18 apples."},
            {"id": "wrong", "text": f"{MARK_ANSWER.format(1)} He has 17 apples."},
        ],
        "run_id": "rubric-run",
        "step": 0,
        "rubric": "generate",
    }
    judged = httpx.post(f"{filled['url']}/v1/judge", json=group, timeout=30).json()
    assert judged["rubric"] is not None, judged
    page.goto(f"{filled['url']}/ui/judgements/{judged['judgement_id']}")
    rubric = page.locator("details.rubric")
    expect(rubric).to_contain_text(judged["rubric"]["id"])
    rubric.locator("summary").click()
    expect(rubric.locator(".rubric-items li")).to_have_count(12)
    expect(rubric.locator('li[data-criterion="item_1"]')).to_contain_text("Gives the final result 18")
    right = page.locator('tr.answer[data-answer="right"]')
    wrong = page.locator('tr.answer[data-answer="wrong"]')
    expect(right.locator('.item[data-criterion="item_1"]')).to_contain_text("✓ met")
    expect(wrong.locator('.item[data-criterion="item_1"]')).to_contain_text("✗ not met")
    expect(wrong.locator('.item[data-criterion="item_12"]')).to_contain_text("✗ pitfall hit")
    expect(right.locator('.item[data-criterion="item_12"]')).to_contain_text("✓ pitfall avoided")
    expect(right.locator(".score")).to_have_text("1.000")
    page.screenshot(path=str(screenshot_dir(tmp_path) / "rubric.png"), full_page=True)
    page.goto(f"{filled['url']}/ui/runs/rubric-run/steps/0")
    expect(page.locator(f"#group-{judged['judgement_id']} details.rubric")).to_contain_text("version 1")
    expect(page.locator(f"#group-{judged['judgement_id']} .item[data-met='yes']")).to_have_count(12)


def test_a_comparison_graders_win_matrix_shows_each_reason_one_click_away(
    page: Page, filled: dict[str, Any], tmp_path: Path
) -> None:
    answers = [("best", "Open it and click Share.", 5), ("odd", HOSTILE[:60], 3), ("worst", "You cannot.", 1)]
    group = {
        "conversation": [{"role": "user", "content": "How do I share the report?"}],
        "reference": "Open the report and click Share.",
        "answers": [{"id": i, "text": f"{text} {MARK_ANSWER.format(mark)}"} for i, text, mark in answers],
        "grader": "pairwise",
        "run_id": "comparison-pages",
        "step": 0,
    }
    judged = httpx.post(f"{filled['url']}/v1/judge", json=group, timeout=30).json()
    page.goto(f"{filled['url']}/ui/judgements/{judged['judgement_id']}")
    matrix = page.locator("#win-matrix")
    expect(matrix.locator("tbody tr")).to_have_count(3)
    cell = matrix.locator('tr[data-row="best"] td[data-col="worst"]')
    expect(cell.locator("summary")).to_have_text("2–0")  # both orders, both won
    expect(matrix.locator('tr[data-row="worst"] td[data-col="best"] summary')).to_have_text("0–2")
    expect(matrix.locator('tr[data-row="odd"] td[data-col="odd"]')).to_have_text("–")
    reason = cell.locator(".reason").first
    expect(reason).to_be_hidden()  # one click away
    cell.locator("summary").click()
    expect(reason).to_be_visible()
    expect(reason).to_have_text("scripted verdict")
    expect(cell).to_contain_text("A = best, B = worst")
    expect(cell).to_contain_text("A = worst, B = best")
    matrix.screenshot(path=str(screenshot_dir(tmp_path) / "win-matrix.png"))


def test_a_jury_judgement_shows_one_column_per_judge(page: Page, tmp_path: Path) -> None:
    engines = [FakeEngine(tmp_path, model, latency_s=0.0, model=model) for model in ("judge-a", "judge-b")]
    judges = [
        {"name": "own", "engine": "local"},
        {"name": "a", "base_url": f"{engines[0].url}/v1", "model": "judge-a"},
        {"name": "b", "base_url": f"{engines[1].url}/v1", "model": "judge-b"},
        {"name": "c", "base_url": f"{engines[0].url}/v1", "model": "judge-a", "temperature": 0.3},
    ]
    service = ServiceProcess(tmp_path, jury=json.dumps(judges))
    try:
        service.start()
        asks = " ".join(
            MARK_BY_MODEL.format(m, n) for m, n in (("fake-judge", 1), ("judge-a", 5), ("judge-b", 1))
        )
        body = {
            "conversation": [{"role": "user", "content": "How do I share the report?"}],
            "reference": "Open the report and click Share.",
            "answers": [
                {"id": "split", "text": f"Click Share. {asks}"},
                {"id": "other", "text": HOSTILE[:80]},
            ],
            "grader": "jury",
            "jury": {"judges": ["own", "a", "b", "c"], "escalate": 1},
        }
        judged = httpx.post(f"{service.url}/v1/judge", json=body, timeout=30).json()
        page.goto(f"{service.url}/ui/judgements/{judged['judgement_id']}")
        split = page.locator('tr.answer[data-answer="split"]')
        expect(split.locator('td.juror[data-judge="a"]')).to_have_text("1.000")
        expect(split.locator('td.juror[data-judge="b"]')).to_have_text("0.000")
        expect(split.locator('td.juror[data-judge="own"]')).to_have_text("0.000")
        expect(split.locator(".spread")).to_have_text("4.000")
        jurors = page.locator("#jurors")
        expect(jurors.locator("tbody tr")).to_have_count(4)
        expect(jurors.locator('tr[data-judge="b"] td').nth(1)).to_have_text("judge-b")
        # own (1) and a (5) disagree on "split", so b and c were called
        expect(jurors.locator('tr[data-judge="c"] .called')).to_have_text("yes, on disagreement")
        jurors.locator('tr[data-judge="a"] summary').first.click()
        expect(jurors.locator('tr[data-judge="a"] .text').first).to_be_visible()
        page.screenshot(path=str(screenshot_dir(tmp_path) / "jury.png"), full_page=True)
    finally:
        service.stop()
        for engine in engines:
            engine.stop()


def test_a_trajectory_shows_as_turns_calls_and_results_with_markup_as_text(
    page: Page, filled: dict[str, Any]
) -> None:
    """An agent's answer on the judgement page: numbered steps, each call with its tool and arguments, each
    result with the call it answers, the group's tools; hostile markup in arguments, results and tool
    descriptions is shown as text (the page fixture fails on any dialog)."""
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": HOSTILE[:80]}}
    group = {
        "conversation": [{"role": "user", "content": "Find the SSO plan."}],
        "tools": [{"type": "function", "function": {"name": "search", "description": HOSTILE[:60]}}],
        "answers": [
            {
                "id": "agent",
                "messages": [
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "name": "search", "content": HOSTILE[:70]},
                    {"role": "assistant", "content": "The Business plan."},
                ],
            },
            {"id": "plain", "text": "Starter."},
        ],
        "run_id": "trajectories",
        "step": 0,
    }
    judged = httpx.post(f"{filled['url']}/v1/judge", json=group, timeout=30).json()
    page.goto(f"{filled['url']}/ui/judgements/{judged['judgement_id']}")
    steps = page.locator('tr.answer[data-answer="agent"] li.turn')
    expect(steps).to_have_count(3)
    expect(steps.nth(0).locator(".call code.tool")).to_have_text("search")
    expect(steps.nth(0).locator(".arguments")).to_have_text(HOSTILE[:80])
    expect(steps.nth(1)).to_contain_text("answers c1")
    expect(steps.nth(1).locator(".text")).to_have_text(HOSTILE[:70])
    expect(steps.nth(2).locator(".text")).to_have_text("The Business plan.")
    expect(page.locator("body")).to_contain_text(HOSTILE[:60])  # the tool's description, as text
    assert page.locator("img[src=x]").count() == 0 and page.locator("script:has-text('alert')").count() == 0


def test_attribution_shows_beside_each_mark_and_flags_the_first_wrong_step(
    page: Page, filled: dict[str, Any]
) -> None:
    """A group judged with attribution "steps": each mark says which steps it rests on, and the step the judge
    names as the first that went wrong is flagged in the trajectory with the criteria that name it."""
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "SSO"}'}}
    group = {
        "conversation": [{"role": "user", "content": "Find the SSO plan."}],
        "answers": [
            {
                "id": "agent",
                "messages": [
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "content": f"Starter plan. {WRONG_STEP}"},
                    {"role": "assistant", "content": "The Starter plan."},
                ],
            },
            {"id": "plain", "text": "Business."},
        ],
        "attribution": "steps",
        "run_id": "attribution",
        "step": 0,
    }
    reply = httpx.post(f"{filled['url']}/v1/judge", json=group, timeout=30)
    assert reply.status_code == 200, reply.text
    page.goto(f"{filled['url']}/ui/judgements/{reply.json()['judgement_id']}")
    agent = page.locator('tr.answer[data-answer="agent"]')
    expect(agent.locator("li.turn.first-wrong")).to_have_count(1)
    flagged = agent.locator('li.turn[data-step="2"]')
    expect(flagged.locator(".pill.wrong")).to_have_text("first wrong: correctness, helpfulness, tone, format")
    expect(agent.locator('.mark[data-criterion="tone"] .attribution')).to_have_text(
        "(rests on steps 2, 3; first went wrong at step 2)"
    )
    plain = page.locator('tr.answer[data-answer="plain"] .mark[data-criterion="tone"] .attribution')
    expect(plain).to_have_text("(no step named)")


def test_the_audit_judges_charts_mark_where_the_training_judge_began_to_part(
    page: Page, tmp_path: Path
) -> None:
    engine = FakeEngine(tmp_path, "auditor", latency_s=0.0, model="auditor")
    audit = {"name": "audit", "base_url": f"{engine.url}/v1", "model": "auditor"}
    service = ServiceProcess(tmp_path, audit=json.dumps(audit), audit_rate="1.0")
    onset, steps = 76, 90  # two audited groups a step: the detector's 150-group warm-up ends at step 75
    try:
        service.start()
        with httpx.Client(base_url=service.url, timeout=30) as client:
            for step in range(steps):
                for _ in range(2):
                    gamed = step >= onset  # the training judge gives a 5 where the audit judge gives a 1
                    marks = [(5, 1) if gamed else (2, 2), (3, 3), (1, 1)]
                    texts = [
                        f"{MARK_ANSWER.format(t)} {MARK_BY_MODEL.format('auditor', a)}" for t, a in marks
                    ]
                    answers = [{"id": f"a{i}", "text": text} for i, text in enumerate(texts)]
                    body = {
                        "conversation": [{"role": "user", "content": "How do I share the report?"}],
                        "reference": "Open the report and click Share.",
                        "answers": answers,
                        "run_id": "audited-run",
                        "step": step,
                    }
                    assert client.post("/v1/judge", json=body).status_code == 200
            for _ in range(300):  # the audit runs in the background
                audit_figures = client.get("/v1/runs/audited-run/steps").json()["audit"]
                if audit_figures and audit_figures["audited_groups"] == 2 * steps:
                    break
                time.sleep(0.1)
        assert audit_figures["onset"]["began_at_step"] == onset
        page.goto(f"{service.url}/ui/runs/audited-run")
        expect(page.locator("#audit .alarm")).to_contain_text(f"at step {onset}")
        for key in ("audit_gap", "audit_rank_correlation", "audit_best_disagreement"):
            figure = page.locator(f'figure[data-chart="{key}"]')
            expect(figure.locator("circle.point")).to_have_count(steps)
            expect(figure.locator("line.marker")).to_have_attribute("data-step", str(onset))
        gaps = page.locator('figure[data-chart="audit_gap"] circle.point')
        values = [float(v) for v in gaps.evaluate_all("ps => ps.map(p => p.dataset.value)")]
        assert values[:onset] == [0.0] * onset and min(values[onset:]) > 0.25
        page.screenshot(path=str(screenshot_dir(tmp_path) / "audit.png"), full_page=True)
    finally:
        service.stop()
        engine.stop()
