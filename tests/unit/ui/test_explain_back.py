"""Where the Explain form sends the reader back to: a page of this service, never another site."""

from __future__ import annotations

import pytest

from judge_service.ui.pages import _back

JID = "0" * 32


@pytest.mark.parametrize(
    "back",
    [
        "/ui/runs/run-1/steps/3#group-" + JID,
        "/ui/runs/run-1/steps/3?sort=sent&cursor=12#group-" + JID,
        f"/ui/judgements/{JID}#answers",
    ],
)
def test_a_page_of_this_service_is_where_the_reader_goes_back(back: str) -> None:
    assert _back(back, JID) == back


@pytest.mark.parametrize(
    "back",
    [
        "",
        "https://elsewhere.example/ui/runs/x",
        "//elsewhere.example/ui/runs/x",
        "/v1/runs",
        "/ui/runs/x\r\nSet-Cookie: a=b",
    ],
)
def test_anything_else_goes_back_to_the_judgement(back: str) -> None:
    assert _back(back, JID) == f"/ui/judgements/{JID}#answers"
