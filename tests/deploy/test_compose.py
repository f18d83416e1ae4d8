"""The compose file passes the Compose specification's JSON schema and runs the fleet as designed."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from judge_service.config import parse_allowed_hosts
from tests.deploy.conftest import DEPLOY, run, tool

COMPOSE = DEPLOY / "compose" / "compose.yaml"


def check(path: Path) -> tuple[int, str]:
    done = run(tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(path))
    return done.returncode, done.stdout + done.stderr


def test_the_compose_file_is_valid() -> None:
    code, output = check(COMPOSE)
    assert code == 0, output


def test_the_validator_refuses_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "compose.yaml"
    broken.write_text(
        COMPOSE.read_text().replace("    restart: unless-stopped\n", "    restrat: unless-stopped\n", 1)
    )
    code, output = check(broken)
    assert code != 0 and "restrat" in output


def test_two_replicas_on_postgres_behind_a_balancer_through_the_router() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert set(services) >= {
        "postgres",
        "migrate",
        "judge",
        "lb",
        "router",
        "vllm-1",
        "vllm-2",
        "prometheus",
        "grafana",
    }
    judge = services["judge"]
    env = judge["environment"]
    assert judge["deploy"]["replicas"] == 2
    assert env["JUDGE_DATABASE_URL"].startswith("postgresql://")
    assert env["JUDGE_OPENAI_BASE_URL"] == "http://router:8080/v1"
    assert judge["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["command"] == ["migrate"]
    grace_s = int(judge["stop_grace_period"].rstrip("s"))
    assert grace_s > float(env["JUDGE_DRAIN_TIMEOUT_S"])
    assert "--policy consistent_hash" in services["router"]["command"]
    for mounted in ("../prometheus/alerts.yml", "../grafana/judge-service.json"):
        assert (COMPOSE.parent / mounted).resolve().exists()


def test_the_replicas_answer_to_the_name_the_balancer_calls_them_by() -> None:
    """nginx forwards with its upstream's name as Host: the Host check (JUDGE_ALLOWED_HOSTS) lets it in."""
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    nginx = (COMPOSE.parent / "nginx.conf").read_text()
    upstream = re.search(r"upstream (\S+) \{\s*server (\S+?):", nginx)
    proxied = re.search(r"proxy_pass http://(\S+);", nginx)
    assert upstream is not None and proxied is not None and "proxy_set_header Host" not in nginx
    assert upstream.group(2) in services and proxied.group(1) == upstream.group(1)
    assert proxied.group(1) in parse_allowed_hosts(services["judge"]["environment"]["JUDGE_ALLOWED_HOSTS"])
