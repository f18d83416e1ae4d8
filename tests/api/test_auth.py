"""Optional API keys: 401 unauthorized with WWW-Authenticate without a valid bearer key; probes stay open."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from judge_service.api.middleware.keys import KeyRing, parse_keys
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings
from tests.api.conftest import group, make_client

KEYS = ["key-one-0123456789", "key-two-abcdefghij"]
PROTECTED = [
    ("POST", "/v1/judge"),
    ("POST", "/v1/judge/batch"),
    ("GET", "/v1/judgements/" + "0" * 32),
    ("GET", "/v1/runs/run-1/judgements"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/no/such/route"),
]


def _ready(client: TestClient) -> TestClient:
    for _ in range(500):
        if client.get("/readyz").status_code == 200:
            return client
    raise TimeoutError("never ready")


@pytest.fixture
def secured(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[TestClient]:
    caplog.set_level(logging.DEBUG)
    with make_client(tmp_path, FakeBackend(), api_keys=" , ".join(KEYS) + ",") as client:
        yield _ready(client)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_protected_routes_need_a_key(secured: TestClient, method: str, path: str) -> None:
    body = group(1) if path == "/v1/judge" else {"groups": [group(1)]} if "batch" in path else None
    response = secured.request(method, path, json=body)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="judge-service"'
    error = response.json()["error"]
    assert error["code"] == "unauthorized"
    assert "Authorization: Bearer <key>" in error["message"]


@pytest.mark.parametrize(
    "header",
    [
        "Bearer wrong-key",
        f"Bearer {KEYS[0]}x",
        f"Bearer {KEYS[0][:-1]}",
        f"Basic {KEYS[0]}",
        KEYS[0],
        "Bearer ",
        f"Bearer {KEYS[0]},{KEYS[1]}",
    ],
)
def test_invalid_keys_are_refused_and_never_echoed(secured: TestClient, header: str) -> None:
    response = secured.post("/v1/judge", json=group(1), headers={"Authorization": header})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    for key in KEYS:
        assert key not in response.text and key not in str(response.headers)
    if header.startswith("Bearer ") and header.strip() != "Bearer":
        assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_every_configured_key_works_on_every_route(secured: TestClient) -> None:
    for key in KEYS:
        judged = secured.post("/v1/judge", json=group(2), headers=bearer(key))
        assert judged.status_code == 200, judged.text
        judgement_id = judged.json()["judgement_id"]
        assert secured.get(f"/v1/judgements/{judgement_id}", headers=bearer(key)).status_code == 200
        assert secured.get("/openapi.json", headers=bearer(key)).status_code == 200
    lower_scheme = {"Authorization": f"bearer {KEYS[1]}"}
    assert secured.get("/v1/runs/r/judgements", headers=lower_scheme).status_code == 200


def test_probes_and_public_metrics_need_no_key(secured: TestClient) -> None:
    assert secured.get("/healthz").status_code == 200
    assert secured.get("/readyz").status_code == 200
    assert secured.get("/metrics").status_code == 200
    assert secured.post("/v1/judge", json=group(1)).status_code == 401
    assert secured.get("/v1/judgements/" + "a" * 32).status_code == 401
    assert secured.get("/no/such/path").status_code == 401
    text = secured.get("/metrics").text
    # Refused before routing, still counted under the route they were for (templates, not raw paths).
    assert 'judge_requests_total{endpoint="/v1/judge",key="",status="401"} 1.0' in text
    assert 'judge_requests_total{endpoint="/v1/judgements/{judgement_id}",key="",status="401"} 1.0' in text
    assert 'judge_requests_total{endpoint="unmatched",key="",status="401"} 1.0' in text


def test_metrics_can_be_made_private(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend(), api_keys=KEYS[0], metrics_public=False) as client:
        _ready(client)
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers=bearer(KEYS[0])).status_code == 200
        assert client.get("/healthz").status_code == 200


def test_without_keys_everything_is_open(client: TestClient) -> None:
    assert client.post("/v1/judge", json=group(1)).status_code == 200
    assert client.get("/openapi.json").status_code == 200


def test_keys_are_never_logged_or_shown(secured: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    secured.post("/v1/judge", json=group(1), headers=bearer("guess-" + KEYS[0]))
    secured.post("/v1/judge", json=group(1), headers=bearer(KEYS[0]))
    settings: Settings = secured.app.state.settings  # type: ignore[attr-defined]
    for key in KEYS:
        assert key not in caplog.text
        assert key not in repr(settings) and key not in str(settings.model_dump())
        assert key not in secured.get("/metrics").text


def test_key_list_parsing() -> None:
    assert parse_keys(None) == []
    assert parse_keys("") == []
    assert parse_keys(" a ,b,, c ") == ["a", "b", "c"]
    assert parse_keys(SecretStr("k1,k2")) == ["k1", "k2"]
    assert Settings(api_keys="x,y").api_keys is not None


def test_comparison_checks_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Constant time in the number of keys: a match on the first key still compares all of them."""
    import hmac

    calls: list[bytes] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append(b)
        return real(a, b)

    monkeypatch.setattr("judge_service.api.middleware.keys.hmac.compare_digest", counting)
    keys = KeyRing(["k1", "k2", "k3"])
    assert keys.principal_for("k1") is not None
    assert len(calls) == 3
    assert keys.principal_for("k4") is None
    assert len(calls) == 6
