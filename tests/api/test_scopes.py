"""Scoped keys: every route needs the scope api/scopes.py names, checked table-driven over the app's
routes (a new route without a scope fails here, and the app refuses to start); the keys file (hashes,
names, rotation, reloading); the key's name in the stored judgement, the access log and the metrics."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.routing import Route

from judge_service.api.middleware import keys as keys_module
from judge_service.api.middleware.keys import (
    ALL_SCOPES,
    KeyRing,
    Scope,
    ShareLimits,
    key_identity,
    read_keys_file,
)
from judge_service.api.scopes import PUBLIC_ROUTES, ROUTE_SCOPES, gate_routes, route_scopes
from judge_service.backends.fake import FakeBackend
from tests.api.conftest import group, make_client, wait_ready

PLAIN_KEY = "plain-key-0123456789"  # JUDGE_API_KEYS: every scope
SCOPED = {scope: f"key-for-{scope.value}-only" for scope in Scope}
ALL_BUT = {scope: f"key-without-{scope.value}" for scope in Scope}
PATH_VALUES = {
    "judgement_id": "0" * 32,
    "run_id": "run-1",
    "step": "1",
    "rubric_id": "rb_" + "0" * 24,
}


def sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def keys_document(extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    entries = [{"name": f"only-{s.value}", "sha256": sha(k), "scopes": [s.value]} for s, k in SCOPED.items()]
    entries += [
        {"name": f"all-but-{s.value}", "sha256": sha(k), "scopes": [o.value for o in Scope if o != s]}
        for s, k in ALL_BUT.items()
    ]
    return {"keys": entries + (extra or [])}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(keys_document()))
    return path


@pytest.fixture
def scoped(tmp_path: Path, keys_file: Path) -> Iterator[TestClient]:
    settings = {"api_keys": PLAIN_KEY, "api_keys_file": keys_file, "metrics_public": False}
    with make_client(tmp_path, FakeBackend(), **settings) as client:
        wait_ready(client)
        yield client


def _app_routes(app: FastAPI) -> list[tuple[str, str, Scope]]:
    """Every (method, route template, scope) of the app that needs a key."""
    found = []
    for route in app.router.routes:
        for method, scope in route_scopes(route).items():
            if scope is not None and method != "HEAD":
                found.append((method, getattr(route, "path", ""), scope))
    return sorted(found)


def _url(template: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES[m.group(1)], template)


def test_every_route_of_the_app_has_a_scope_and_the_table_names_no_other(scoped: TestClient) -> None:
    app: FastAPI = scoped.app  # type: ignore[assignment]
    routes = _app_routes(app)
    assert {(m, p) for m, p, _ in routes} == set(ROUTE_SCOPES)
    public = {getattr(r, "path", "") for r in app.router.routes if not any(route_scopes(r).values())}
    assert public == set(PUBLIC_ROUTES)
    # The OpenAPI document says what each operation needs.
    paths = scoped.get("/openapi.json", headers=bearer(PLAIN_KEY)).json()["paths"]
    for method, path, scope in routes:
        if path in paths:
            assert paths[path][method.lower()]["x-scope"] == scope.value, (method, path)


def test_a_route_missing_from_the_table_stops_the_app() -> None:
    app = FastAPI()

    @app.get("/v1/new-thing")
    async def new_thing() -> dict[str, str]:
        return {}

    with pytest.raises(RuntimeError, match=r"GET /v1/new-thing"):
        gate_routes(app)


def test_each_route_refuses_a_key_without_its_scope_and_admits_one_with_only_that_scope(
    scoped: TestClient,
) -> None:
    app: FastAPI = scoped.app  # type: ignore[assignment]
    for method, path, scope in _app_routes(app):
        url = _url(path)
        refused = scoped.request(method, url, headers=bearer(ALL_BUT[scope]), json={}, follow_redirects=False)
        assert refused.status_code == 403, (method, path, refused.status_code, refused.text[:200])
        error = refused.json()["error"]
        assert error["code"] == "forbidden" and error["details"] == {
            "scope": scope.value,
            "key": f"all-but-{scope.value}",
        }
        assert f"lacks the scope {scope.value!r}" in error["message"]
        admitted = scoped.request(method, url, headers=bearer(SCOPED[scope]), json={}, follow_redirects=False)
        assert admitted.status_code not in (401, 403) or "lacks the scope" not in admitted.text, (
            method,
            path,
            admitted.status_code,
        )
        assert admitted.status_code != 401, (method, path)
        # JUDGE_API_KEYS keys keep every scope.
        plain = scoped.request(method, url, headers=bearer(PLAIN_KEY), json={}, follow_redirects=False)
        assert "lacks the scope" not in plain.text, (method, path)


def test_the_scope_is_checked_before_the_body_is_read(scoped: TestClient) -> None:
    """A key without `judge` is refused 403 for a body too large to parse, not 413 or 422."""
    response = scoped.post(
        "/v1/judge", content=b"{" * (8 * 2**20), headers={**bearer(SCOPED[Scope.READ]), "Content-Type": "x"}
    )
    assert response.status_code in (403, 413)  # the size cap (outermost) may answer first: never parsed
    response = scoped.post("/v1/judge", content=b"not json", headers=bearer(SCOPED[Scope.READ]))
    assert response.status_code == 403


def test_the_key_name_is_the_stored_caller_the_metric_label_and_in_the_access_log(
    tmp_path: Path, keys_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="judge_service.access")
    with make_client(
        tmp_path, FakeBackend(), api_keys=PLAIN_KEY, api_keys_file=keys_file, access_log=True
    ) as client:
        wait_ready(client)
        judged = client.post("/v1/judge", json=group(2), headers=bearer(SCOPED[Scope.JUDGE]))
        assert judged.status_code == 200, judged.text
        judgement_id = judged.json()["judgement_id"]
        stored = client.get(f"/v1/judgements/{judgement_id}", headers=bearer(PLAIN_KEY)).json()
        assert stored["caller"] == "only-judge"
        plain = client.post("/v1/judge", json=group(2), headers=bearer(PLAIN_KEY)).json()
        stored = client.get(f"/v1/judgements/{plain['judgement_id']}", headers=bearer(PLAIN_KEY)).json()
        assert stored["caller"] == key_identity(PLAIN_KEY)
        metrics = client.get("/metrics").text
        assert 'judge_requests_total{endpoint="/v1/judge",key="only-judge",status="200"} 1.0' in metrics
        lines = [r.getMessage() for r in caplog.records if r.name == "judge_service.access"]
        assert any('"POST /v1/judge" 200' in line and line.endswith("key=only-judge") for line in lines)
        assert any(line.endswith("key=-") and "/metrics" in line for line in lines)
        for key in [PLAIN_KEY, *SCOPED.values()]:
            assert key not in caplog.text and key not in metrics


def test_a_rotation_lists_both_hashes_under_one_name_and_the_file_is_read_again_when_it_changes(
    tmp_path: Path, keys_file: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(keys_module, "RELOAD_EVERY_S", 0.0)
    old, new = "rotating-old-key", "rotating-new-key"
    rotation = {"name": "trainer", "sha256": [sha(old), sha(new)], "scopes": ["judge", "read"]}
    keys_file.write_text(json.dumps(keys_document([rotation])))
    with make_client(tmp_path, FakeBackend(), api_keys_file=keys_file) as client:
        wait_ready(client)
        for key in (old, new):
            assert client.get("/v1/graders", headers=bearer(key)).status_code == 200
        # The rotation ends: the old hash leaves the file, and with it the old key.
        keys_file.write_text(json.dumps(keys_document([{**rotation, "sha256": sha(new)}])))
        assert client.get("/v1/graders", headers=bearer(old)).status_code == 401
        assert client.get("/v1/graders", headers=bearer(new)).status_code == 200
        # A scope taken away applies at once.
        keys_file.write_text(
            json.dumps(keys_document([{**rotation, "sha256": sha(new), "scopes": ["judge"]}]))
        )
        assert client.get("/v1/graders", headers=bearer(new)).status_code == 403
        # A broken file does not lock anyone out, nor open anything up: the keys in force stay.
        keys_file.write_text('{"keys": [')
        assert client.get("/v1/graders", headers=bearer(SCOPED[Scope.READ])).status_code == 200
        assert client.get("/v1/graders", headers=bearer(old)).status_code == 401
        assert "keys file not reloaded" in caplog.text


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"keys": [{"name": "a", "sha256": "xyz", "scopes": ["read"]}]}, "keys.0.sha256"),
        ({"keys": [{"name": "a", "sha256": "0" * 64, "scopes": ["write"]}]}, "keys.0.scopes.0"),
        ({"keys": [{"name": "a", "sha256": "0" * 64, "scopes": []}]}, "keys.0.scopes"),
        ({"keys": [{"name": "a b", "sha256": "0" * 64, "scopes": ["read"]}]}, "keys.0.name"),
        ({"keys": [{"name": "a", "sha256": "0" * 64, "scopes": ["read"], "key": "x"}]}, "keys.0.key"),
        (
            {"keys": [{"name": "a", "sha256": "0" * 64, "scopes": ["read"]}] * 2},
            "name(s) a appear more than once",
        ),
    ],
)
def test_a_keys_file_that_is_not_valid_stops_the_service_saying_what_to_fix(
    tmp_path: Path, document: dict[str, Any], problem: str
) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=re.escape(problem)):
        make_client(tmp_path, FakeBackend(), api_keys_file=path)
    with pytest.raises(ValueError, match="cannot be read"):
        KeyRing(keys_file=tmp_path / "missing.json")


def test_a_key_listed_in_both_places_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": [{"name": "dup", "sha256": sha(PLAIN_KEY), "scopes": ["read"]}]}))
    with pytest.raises(ValueError, match="named dup are also in JUDGE_API_KEYS"):
        KeyRing([PLAIN_KEY], keys_file=path)


def test_limits_come_from_the_entry_else_from_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    entries = [
        {"name": "own", "sha256": "1" * 64, "scopes": ["judge"], "max_groups_in_flight": 3},
        {"name": "unlimited", "sha256": "2" * 64, "scopes": ["judge"], "groups_per_minute": None},
        {"name": "default", "sha256": "3" * 64, "scopes": ["judge"]},
    ]
    path.write_text(json.dumps({"keys": entries}))
    limits = {p.name: p.limits for _, p in read_keys_file(path, ShareLimits(10, 600))}
    assert limits == {
        "own": ShareLimits(3, 600),
        "unlimited": ShareLimits(10, None),
        "default": ShareLimits(10, 600),
    }
    ring = KeyRing(["k"], defaults=ShareLimits(10, 600))
    principal = ring.principal_for("k")
    assert (
        principal is not None and principal.scopes == ALL_SCOPES and principal.limits == ShareLimits(10, 600)
    )


def test_the_pages_sign_in_needs_read_and_a_session_ends_with_its_scope(
    tmp_path: Path, keys_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keys_module, "RELOAD_EVERY_S", 0.0)
    reader = {"name": "reader", "sha256": sha("reader-key"), "scopes": ["read"]}
    keys_file.write_text(json.dumps(keys_document([reader])))
    with make_client(tmp_path, FakeBackend(), api_keys_file=keys_file, session_secret="s3cret") as client:
        wait_ready(client)
        form = client.get("/ui/signin")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf is not None
        judge_only = client.post(
            "/ui/signin", data={"key": SCOPED[Scope.JUDGE], "csrf": csrf.group(1)}, follow_redirects=False
        )
        assert judge_only.status_code == 403 and "lacks the scope" in judge_only.text
        signed_in = client.post(
            "/ui/signin", data={"key": "reader-key", "csrf": csrf.group(1)}, follow_redirects=False
        )
        assert signed_in.status_code == 303
        assert client.get("/ui/runs", follow_redirects=False).status_code == 200
        keys_file.write_text(json.dumps(keys_document([{**reader, "scopes": ["judge"]}])))
        gone = client.get("/ui/runs", follow_redirects=False)
        assert gone.status_code == 303 and gone.headers["location"].startswith("/ui/signin")


def test_route_scopes_cover_head_with_get() -> None:
    async def endpoint(_: Any) -> None: ...

    route = Route("/v1/runs", endpoint, methods=["GET", "HEAD"])
    assert route_scopes(route) == {"GET": Scope.READ, "HEAD": Scope.READ}
