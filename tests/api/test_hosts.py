"""DNS rebinding against a real service process (keys off, the default): a request naming a host the
service does not answer to gets 400 host_not_allowed naming JUDGE_ALLOWED_HOSTS, on every route and
before any judging; the bind address, localhost and the listed names are served."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.service_process import ServiceProcess, group

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(tmp_path_factory.mktemp("hosts"), allowed_hosts="judge.internal,.example.org")
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/runs"),
        ("POST", "/v1/judge"),
        ("POST", "/v1/prune"),
        ("GET", "/ui/runs"),
        ("GET", "/healthz"),
    ],
)
def test_a_rebound_name_is_refused_before_anything_runs(
    service: ServiceProcess, method: str, path: str
) -> None:
    with httpx.Client(base_url=service.url, timeout=10) as client:
        body = group(2, run_id="rebound") if path == "/v1/judge" else {"before": "2100-01-01T00:00:00Z"}
        sent = {"json": body} if method == "POST" else {}
        refused = client.request(method, path, headers={"Host": "rebind.evil.example:8000"}, **sent)
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["code"] == "host_not_allowed" and error["details"] == {
            "host": "rebind.evil.example:8000"
        }
        assert "JUDGE_ALLOWED_HOSTS" in error["message"] and "127.0.0.1" in error["message"]
        assert client.get("/v1/runs/rebound/judgements").json()["items"] == []  # nothing was judged
        assert client.get("/readyz").status_code == 200


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "localhost:{port}",
        "LOCALHOST.",
        "app.localhost",
        "[::1]:{port}",
        "judge.internal",
        "Judge.Internal:443",
        "example.org",
        "api.example.org:{port}",
    ],
)
def test_the_bind_address_localhost_and_listed_names_are_served(service: ServiceProcess, host: str) -> None:
    with httpx.Client(base_url=service.url, timeout=10) as client:
        named = {"Host": host.format(port=service.port)}
        judged = client.post("/v1/judge", json=group(2, run_id="named"), headers=named)
        assert judged.status_code == 200, judged.text
        assert client.get(f"/v1/judgements/{judged.json()['judgement_id']}", headers=named).status_code == 200


@pytest.mark.parametrize(
    "host", ["example.org.evil.example", "notexample.org", "judge.internal.evil.example"]
)
def test_names_that_only_look_like_listed_ones_are_refused(service: ServiceProcess, host: str) -> None:
    response = httpx.get(f"{service.url}/v1/runs", headers={"Host": host}, timeout=10)
    assert response.status_code == 400 and response.json()["error"]["code"] == "host_not_allowed"
