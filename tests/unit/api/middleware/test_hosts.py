"""The Host check (api/middleware/hosts.py) and JUDGE_ALLOWED_HOSTS (config.parse_allowed_hosts)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from judge_service.api.middleware.hosts import HostPolicy, host_name
from judge_service.config import Settings, parse_allowed_hosts


def refused(
    policy: HostPolicy, host: str | None, server: tuple[str, int] | None = ("127.0.0.1", 8000)
) -> bool:
    headers = [(b"user-agent", b"t")] + ([(b"host", host.encode())] if host is not None else [])
    return policy.refused({"type": "http", "headers": headers, "server": server}) is not None


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("Example.COM:8000", "example.com"),
        ("example.com.", "example.com"),
        ("[::1]:8000", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[::ffff:10.0.0.5]:80", "10.0.0.5"),
        ("10.0.0.5", "10.0.0.5"),
    ],
)
def test_host_name(value: str, name: str) -> None:
    assert host_name(value) == name


def test_bound_to_loopback_it_answers_to_localhost_names_only() -> None:
    policy = HostPolicy("127.0.0.1")
    for host in ("127.0.0.1:8000", "localhost", "a.localhost:1", "127.0.0.2", "[::1]:8000", None):
        assert not refused(policy, host), host
    for host in ("rebind.evil.example", "10.0.0.5", "localhost.evil.example", "judge"):
        assert refused(policy, host), host


def test_bound_to_one_address_it_answers_to_that_address() -> None:
    policy = HostPolicy("10.0.0.5")
    assert not refused(policy, "10.0.0.5:8000", server=("10.0.0.5", 8000))
    assert refused(policy, "localhost", server=("10.0.0.5", 8000))
    assert refused(policy, "10.0.0.6", server=("10.0.0.5", 8000))


def test_bound_to_every_interface_it_answers_to_any_address_and_localhost() -> None:
    for bind in ("0.0.0.0", "::"):
        policy = HostPolicy(bind)
        for host in ("10.1.2.3:8000", "[fd00::1]:8000", "localhost:8000", "[::ffff:172.17.0.2]"):
            assert not refused(policy, host, server=("10.1.2.3", 8000)), host
        assert refused(policy, "judge-service:8000", server=("10.1.2.3", 8000))


def test_in_process_clients_are_served_under_the_name_they_called() -> None:
    # TestClient and httpx's ASGITransport put the name they called into scope["server"].
    assert not refused(HostPolicy("127.0.0.1"), "testserver", server=("testserver", 80))
    assert refused(HostPolicy("127.0.0.1"), "testserver", server=("127.0.0.1", 8000))


def test_listed_names_domains_and_any() -> None:
    policy = HostPolicy("0.0.0.0", parse_allowed_hosts("judge-service, .Example.org"))
    for host in ("judge-service:8000", "JUDGE-SERVICE", "example.org", "a.b.example.org:443"):
        assert not refused(policy, host), host
    for host in ("judge-service.evil", "notexample.org", "example.org.evil.example"):
        assert refused(policy, host), host
    assert not refused(HostPolicy("127.0.0.1", ["*"]), "anything.example")


def test_the_refusal_names_what_is_served_and_the_setting() -> None:
    policy = HostPolicy("127.0.0.1", ["judge.internal"])
    response = policy.refusal("rebind.evil.example")
    assert response.status_code == 400
    text = bytes(response.body).decode()
    for part in (
        "host_not_allowed",
        "rebind.evil.example",
        "127.0.0.1, localhost, judge.internal",
        "JUDGE_ALLOWED_HOSTS",
    ):
        assert part in text


def test_accepted_hosts_are_remembered_up_to_a_bound() -> None:
    policy = HostPolicy("0.0.0.0")
    for i in range(1000):
        assert not refused(policy, f"10.0.{i // 250}.{i % 250}")
    assert len(policy._accepted) == 256


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("a.example, .b.example ,, *", ("a.example", ".b.example", "*")),
        ('["a.example", "[::1]"]', ("a.example", "[::1]")),
        ("", ()),
    ],
)
def test_the_setting_takes_a_comma_list_or_json(value: str, names: tuple[str, ...]) -> None:
    assert parse_allowed_hosts(value) == names


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("*.example.com", "'.example.com' for a domain"),
        ("judge.example:8000", "without a port"),
        ("http://judge.example", "not a host name"),
        ('["a", 1]', "must hold names"),
        ("[not json", "not a JSON list"),
    ],
)
def test_a_setting_that_is_not_names_stops_the_start_saying_what_to_fix(value: str, problem: str) -> None:
    with pytest.raises(ValidationError, match="JUDGE_ALLOWED_HOSTS") as raised:
        Settings(allowed_hosts=value)
    assert problem in str(raised.value)
