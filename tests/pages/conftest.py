"""The run pages in a real browser: Debian's chromium (scripts/install.sh installs it) driven by
Playwright, against the service as a real process on the fake judge, filled through the API.

Screenshots go to the test's output folder (pytest's tmp_path), or to $JUDGE_SCREENSHOTS when set
(`JUDGE_SCREENSHOTS=docs .venv/bin/python -m pytest tests/pages` refreshes docs/run-page.png).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from judge_service.backends.fake import LEAVE_ONE_UNSCORED
from tests.service_process import ServiceProcess

RUN = "browser-run"
STEPS = 12
GROUPS_PER_STEP = 3
BUSY_STEP = 11  # gets extra groups, more than a page holds
BUSY_GROUPS = 25
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> **bold** ' + "y" * 3000
API_KEY = "page-test-key-1"


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:  # never a silent skip: the set-up installs it (scripts/install.sh)
        raise RuntimeError("chromium is not installed: run `make install` (scripts/install.sh installs it)")
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Module scope, not session: Playwright's sync API keeps an event loop running in this thread while
    # it is open, and the async tests of other modules need the thread's loop free.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    yield page
    context.close()
    assert dialogs == [], f"a script ran on a page: {dialogs}"  # caller text must never execute


def screenshot_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("JUDGE_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def group(step: int, index: int, **extra: Any) -> dict[str, Any]:
    answers = [
        {"id": "good", "text": "Open the report, click Share and pick the client."},
        {"id": "html", "text": HOSTILE},
        {"id": "short", "text": "Click Share."},
        {"id": "wrong", "text": "You cannot share reports."},
        # An id of its own per group: the fake judge's marks follow ids, so the run's figures vary by step.
        {"id": f"extra-{step}-{index}", "text": "Ask your admin to share it."},
    ]
    conversation = "How do I share the quarterly report with a client?"
    if (step, index) == (2, GROUPS_PER_STEP - 1):
        # One answer of this group ends unscored: the one the fake judge is shown first. Not a group with a
        # canary, whose place in the order is drawn per judgement and which would sometimes be that answer.
        conversation += " " + LEAVE_ONE_UNSCORED
    return {
        "conversation": [{"role": "user", "content": conversation}],
        "reference": "Open the report, click Share and pick the client.",
        "answers": answers,
        "run_id": RUN,
        "step": step,
        "group_key": f"prompt-{step}-{index}",
        "orders": 2 if index == 1 else 1,
        "canaries": "on" if index == 0 else "off",  # one canary a step: the canary chart has every step
        **extra,
    }


@pytest.fixture(scope="session")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A service with one run: STEPS steps of GROUPS_PER_STEP groups (BUSY_GROUPS at BUSY_STEP), one
    group with an unscored answer, one regraded group."""
    # A code grader whose explanation fields the judgement page shows (test_a_code_graders_fields_...).
    code_graders = '[{"name": "verl-match", "target": "tests.code_graders:verl_match", "signature": "verl", '
    code_graders += '"score_range": [-1, 1]}]'
    # The fake judge thinks when a request asks (the judgement page folds its thinking).
    service = ServiceProcess(
        tmp_path_factory.mktemp("pages"), code_graders=code_graders, thinking_switch="toggle"
    ).start()
    try:
        with httpx.Client(base_url=service.url, timeout=30) as client:
            groups = [group(s, i) for s in range(STEPS) for i in range(GROUPS_PER_STEP)]
            groups += [group(BUSY_STEP, i) for i in range(GROUPS_PER_STEP, BUSY_GROUPS)]
            ids = []
            for start in range(0, len(groups), 32):
                reply = client.post("/v1/judge/batch", json={"groups": groups[start : start + 32]})
                assert reply.status_code == 200, reply.text
                ids += [r["judgement"]["judgement_id"] for r in reply.json()["results"]]
            regraded = client.post("/v1/regrade", json={"judgement_ids": [ids[0]], "orders": 2})
            assert regraded.status_code == 200, regraded.text
            new_id = regraded.json()["results"][0]["judgement"]["judgement_id"]
        yield {"url": service.url, "ids": ids, "regraded": (ids[0], new_id)}
    finally:
        service.stop()


@pytest.fixture(scope="session")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A service with API keys on, one judged group in it."""
    service = ServiceProcess(tmp_path_factory.mktemp("keyed"), api_keys=API_KEY).start()
    try:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        reply = httpx.post(f"{service.url}/v1/judge", json=group(0, 0), headers=headers, timeout=30)
        assert reply.status_code == 200, reply.text
        yield service.url
    finally:
        service.stop()
