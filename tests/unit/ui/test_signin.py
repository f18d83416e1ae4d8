"""The sign-in's redirect target (ui/signin.py)."""

from __future__ import annotations

from judge_service.ui.signin import _safe_next


def test_the_sign_in_only_returns_to_a_page_of_this_service() -> None:
    assert _safe_next("/ui/runs/r?from=3") == "/ui/runs/r?from=3"
    for target in (
        "https://evil.example/ui/",
        "//evil.example/ui/x",
        "/v1/runs",
        "/ui/\\\\evil",
        "javascript:1",
    ):
        assert _safe_next(target) == "/ui/runs"
