"""The pages' signed session and CSRF tokens (ui/session.py), and the sign-in's redirect target."""

from __future__ import annotations

from judge_service.api.middleware.session import SESSION_S, SessionSigner
from judge_service.ui.charts import Series, line_chart
from judge_service.ui.signin import _safe_next


def test_a_session_verifies_until_it_expires_and_only_under_the_same_keys() -> None:
    signer = SessionSigner(["k1", "k2"])
    cookie = signer.issue("caller-a", now=1000.0)
    session = signer.verify(cookie, now=1000.0 + SESSION_S - 1)
    assert session is not None and session.caller == "caller-a"
    assert signer.verify(cookie, now=1000.0 + SESSION_S + 1) is None  # expired
    assert SessionSigner(["k2", "k1"]).verify(cookie, now=1001.0) is not None  # same keys, any order
    assert SessionSigner(["k1"]).verify(cookie, now=1001.0) is None  # keys rotated: sessions end
    body, signature = cookie.split(".")
    assert signer.verify(f"{body}x.{signature}", now=1001.0) is None
    assert signer.verify("garbage", now=1001.0) is None and signer.verify(None) is None


def test_csrf_tokens_bind_to_their_seed() -> None:
    signer = SessionSigner(["k"])
    token = signer.csrf_token("seed-1")
    assert signer.csrf_valid("seed-1", token)
    assert not signer.csrf_valid("seed-2", token)
    assert not signer.csrf_valid(None, token) and not signer.csrf_valid("seed-1", "")


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


def test_a_chart_has_a_point_per_value_and_breaks_at_gaps() -> None:
    svg = line_chart(Series("Mean <score>", [0, 1, 2, 3], [0.5, None, 0.25, 1.0], lower=0.0, upper=1.0))
    assert svg.count('class="point"') == 3 and svg.count('class="line"') == 2
    assert "Mean &lt;score&gt;" in svg and "<score>" not in svg
    assert "no values" in line_chart(Series("Empty", [0], [None]))
