"""Fair shares between keys (api/shares.py): groups in flight and groups per minute per key, 429
over_share with Retry-After, and a request no wait could admit refused 422 with what to send instead."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge_service.api.middleware.keys import ALL_SCOPES, Principal, ShareLimits
from judge_service.api.shares import KeyShares, OverShareError
from judge_service.backends.fake import FakeBackend
from judge_service.errors import InvalidGroupError
from tests.api.conftest import group, make_client, wait_ready


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def principal(name: str = "k", in_flight: int | None = None, per_minute: int | None = None) -> Principal:
    return Principal(name, ALL_SCOPES, ShareLimits(in_flight, per_minute))


async def test_groups_in_flight_are_held_until_answered_and_each_key_has_its_own() -> None:
    shares = KeyShares()
    a, b = principal("a", in_flight=2), principal("b", in_flight=2)
    async with shares.hold(a, 1), shares.hold(a, 1):
        with pytest.raises(OverShareError) as refused:
            async with shares.hold(a, 1):
                pass
        assert refused.value.retry_after_s == 1 and refused.value.details["limit"] == "max_groups_in_flight"
        async with shares.hold(b, 2):
            assert shares.in_flight("b") == 2
    assert shares.in_flight("a") == 0
    async with shares.hold(a, 2):  # released, even after a refusal
        pass


async def test_members_count_as_fractions_of_their_group() -> None:
    shares = KeyShares()
    a = principal(in_flight=1)
    async with shares.hold(a, 1 / 3), shares.hold(a, 1 / 3), shares.hold(a, 1 / 3):
        with pytest.raises(OverShareError):
            async with shares.hold(a, 1 / 3):
                pass


async def test_the_per_minute_bucket_refills_at_its_rate_and_says_when_to_come_back() -> None:
    clock = Clock()
    shares = KeyShares(clock)
    a = principal(per_minute=60)  # one a second, a minute's burst
    for _ in range(60):
        async with shares.hold(a, 1):
            pass
    with pytest.raises(OverShareError) as refused:
        async with shares.hold(a, 5):
            pass
    assert refused.value.retry_after_s == 5 and refused.value.code == "over_share"
    clock.now += 5
    async with shares.hold(a, 5):
        pass
    clock.now += 3600  # never more than a minute's worth
    for _ in range(60):
        async with shares.hold(a, 1):
            pass
    with pytest.raises(OverShareError):
        async with shares.hold(a, 1):
            pass


async def test_a_request_larger_than_the_whole_share_is_refused_with_what_to_send() -> None:
    shares = KeyShares()
    with pytest.raises(InvalidGroupError, match="send batches of at most 4 groups"):
        async with shares.hold(principal(in_flight=4), 5):
            pass
    with pytest.raises(InvalidGroupError, match="groups_per_minute = 2"):
        async with shares.hold(principal(per_minute=2), 3):
            pass


async def test_without_keys_or_limits_nothing_is_counted() -> None:
    shares = KeyShares()
    async with shares.hold(None, 1000), shares.hold(principal(), 1000):
        assert shares.in_flight("k") == 0


def _sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def test_one_key_flooding_gets_429_while_another_is_judged(tmp_path: Path) -> None:
    """Over HTTP: the flooding key's excess is refused 429 over_share (Retry-After), the other key's
    request is judged meanwhile, and a batch over the share is 422."""
    keys = {
        "keys": [
            {"name": "flood", "sha256": _sha("flood-key"), "scopes": ["judge"], "max_groups_in_flight": 2},
            {"name": "quiet", "sha256": _sha("quiet-key"), "scopes": ["judge"]},
        ]
    }
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(keys))
    backend = FakeBackend(latency_s=0.5)
    with make_client(tmp_path, backend, api_keys_file=path, key_groups_per_minute=1000) as client:
        wait_ready(client)
        results: list[httpx.Response] = []

        def flood(i: int) -> None:
            body = group(2, group_key=f"f{i}")
            results.append(client.post("/v1/judge", json=body, headers={"Authorization": "Bearer flood-key"}))

        threads = [threading.Thread(target=flood, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        quiet = client.post("/v1/judge", json=group(2), headers={"Authorization": "Bearer quiet-key"})
        for thread in threads:
            thread.join()
        assert quiet.status_code == 200, quiet.text
        statuses = sorted(r.status_code for r in results)
        assert statuses.count(200) >= 2 and statuses.count(429) >= 1 and set(statuses) <= {200, 429}
        for refused in (r for r in results if r.status_code == 429):
            assert refused.headers["Retry-After"] == "1"
            error: dict[str, Any] = refused.json()["error"]
            assert error["code"] == "over_share" and error["details"]["key"] == "flood"
        batch = {"groups": [group(2) for _ in range(3)]}
        too_big = client.post("/v1/judge/batch", json=batch, headers={"Authorization": "Bearer flood-key"})
        assert too_big.status_code == 422 and "at most 2 groups" in too_big.json()["error"]["message"]
