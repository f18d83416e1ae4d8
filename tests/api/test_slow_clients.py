"""Slow and silent clients against a real service process, on raw sockets: a body or headers sent a byte
at a time get 408 and a closed connection, a connection that never sends and an idle keep-alive are
closed, and clients that trickle their bodies take no in-flight slot from other callers. After each, the
service still judges and has lost no judgement."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.service_process import ServiceProcess, group

HEADER_S = 1.0
BODY_S = 1.5
KEEP_ALIVE_S = 1
SLACK_S = 3.0  # scheduling on a loaded machine

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        tmp_path_factory.mktemp("slow-clients"),
        header_timeout_s=HEADER_S,
        body_timeout_s=BODY_S,
        keep_alive_s=KEEP_ALIVE_S,
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def head(port: int, length: int = 1000) -> bytes:
    return (
        f"POST /v1/judge HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def trickle(conn: socket.socket, data: bytes, every_s: float, limit_s: float) -> tuple[bytes, float]:
    """Send `data` a byte every `every_s` until the server answers and closes; (what it sent, seconds)."""
    started = time.monotonic()
    received = b""
    for byte in data:
        readable, _, _ = select.select([conn], [], [], every_s)
        if readable or time.monotonic() - started > limit_s:
            break
        conn.sendall(bytes([byte]))
    conn.settimeout(max(0.1, limit_s - (time.monotonic() - started)))
    while chunk := conn.recv(65536):
        received += chunk
    return received, time.monotonic() - started


def closed_after(conn: socket.socket, limit_s: float) -> tuple[bytes, float]:
    """Wait for the server to close `conn`: (anything it sent, seconds); socket.timeout if it does not."""
    started = time.monotonic()
    conn.settimeout(limit_s)
    received = b""
    while chunk := conn.recv(65536):
        received += chunk
    return received, time.monotonic() - started


def whole_response(conn: socket.socket) -> bytes:
    """One response read to its end (headers and Content-Length body), however the segments fall: the
    body may arrive after the headers, and must not count as sent after the response."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += conn.recv(65536)
    head, _, body = raw.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


def timeout_reply(raw: bytes) -> dict[str, object]:
    head_part, _, body = raw.partition(b"\r\n\r\n")
    lines = head_part.decode().split("\r\n")
    assert lines[0].startswith("HTTP/1.1 408"), raw[:200]
    assert "connection: close" in [line.lower() for line in lines[1:]]
    error: dict[str, object] = json.loads(body)["error"]
    assert error["code"] == "request_timeout"
    return error


def assert_still_judging(proc: ServiceProcess, run_id: str) -> None:
    """Ready, judging, and every judgement of `run_id` answered 200 is stored."""
    with httpx.Client(base_url=proc.url, timeout=10) as client:
        assert client.get("/readyz").status_code == 200
        judged = [client.post("/v1/judge", json=group(2, run_id=run_id)) for _ in range(2)]
        assert [r.status_code for r in judged] == [200, 200]
        stored = client.get(f"/v1/runs/{run_id}/judgements").json()["items"]
        assert {i["judgement_id"] for i in stored} >= {r.json()["judgement_id"] for r in judged}


def test_a_body_sent_a_byte_at_a_time_gets_408_and_the_connection_is_closed(service: ServiceProcess) -> None:
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as conn:
        conn.sendall(head(service.port))
        raw, seconds = trickle(conn, b"x" * 1000, every_s=0.1, limit_s=BODY_S + SLACK_S)
    error = timeout_reply(raw)
    assert "JUDGE_BODY_TIMEOUT_S" in str(error["message"]) and error["details"] == {"limit_s": BODY_S}
    assert BODY_S * 0.9 <= seconds <= BODY_S + SLACK_S
    assert_still_judging(service, "after-slow-body")


def test_headers_sent_a_byte_at_a_time_get_408_and_the_connection_is_closed(service: ServiceProcess) -> None:
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as conn:
        conn.sendall(b"POST /v1/judge HTTP/1.1\r\n")
        raw, seconds = trickle(conn, b"X-Slow: " + b"y" * 1000, every_s=0.1, limit_s=HEADER_S + SLACK_S)
    error = timeout_reply(raw)
    assert "JUDGE_HEADER_TIMEOUT_S" in str(error["message"])
    assert HEADER_S * 0.9 <= seconds <= HEADER_S + SLACK_S
    assert_still_judging(service, "after-slow-headers")


def test_a_connection_that_never_sends_is_closed(service: ServiceProcess) -> None:
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as conn:
        received, seconds = closed_after(conn, HEADER_S + SLACK_S)
    assert received == b""  # nothing asked, nothing answered: just closed
    assert seconds >= HEADER_S * 0.9
    assert_still_judging(service, "after-silent")


def test_an_idle_keep_alive_connection_is_closed(service: ServiceProcess) -> None:
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as conn:
        conn.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{service.port}\r\n\r\n".encode())
        reply = whole_response(conn)
        assert reply.startswith(b"HTTP/1.1 200") and b"connection: close" not in reply.lower()
        received, seconds = closed_after(conn, KEEP_ALIVE_S + SLACK_S)
    assert received == b""
    assert seconds >= KEEP_ALIVE_S * 0.9
    assert_still_judging(service, "after-idle")


def test_clients_trickling_bodies_take_no_in_flight_slot_from_other_callers(tmp_path: Path) -> None:
    """Twice as many trickling bodies as JUDGE_MAX_REQUESTS_IN_FLIGHT: other callers are still judged
    (no 429), and the tricklers are cut off at the body deadline."""
    cap = 4
    proc = ServiceProcess(tmp_path, max_requests_in_flight=cap, body_timeout_s=30)
    proc.start()
    tricklers: list[socket.socket] = []
    try:
        for _ in range(2 * cap):
            conn = socket.create_connection(("127.0.0.1", proc.port), timeout=5)
            tricklers.append(conn)
            conn.sendall(head(proc.port) + b'{"conversation": [')  # and nothing more for now
        time.sleep(0.5)  # every trickler's headers are in: the app is reading their bodies

        def judge(i: int) -> int:
            with httpx.Client(base_url=proc.url, timeout=20) as client:
                return client.post("/v1/judge", json=group(2, run_id="beside-tricklers")).status_code

        with ThreadPoolExecutor(max_workers=cap - 1) as pool:
            statuses = list(pool.map(judge, range(3 * cap)))
        assert statuses == [200] * (3 * cap)
        for conn in tricklers:  # still waiting for their bodies: no answer yet
            assert select.select([conn], [], [], 0)[0] == []
        with httpx.Client(base_url=proc.url, timeout=10) as client:
            stored = client.get("/v1/runs/beside-tricklers/judgements").json()["items"]
        assert len(stored) == 3 * cap
        assert_still_judging(proc, "beside-tricklers")
    finally:
        for conn in tricklers:
            conn.close()
        proc.stop()
