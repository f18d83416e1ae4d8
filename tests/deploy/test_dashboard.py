"""The Grafana dashboard is the generator's output, every expression passes promtool, and every metric
the dashboard or the alert rules name is one that a live service, a live vllm-router or the installed
vLLM exports: a renamed metric fails here, not on an operator's empty panel."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import vllm
import yaml

from judge_service.backends.fake import MARK_ANSWER
from judge_service.metrics import JudgeMetrics
from tests.deploy.conftest import DEPLOY, exported_names, metric_names, run, tool
from tests.deploy.test_prometheus import alert_metric_names
from tests.scaleout.fake_engine import MODEL
from tests.scaleout.load import body
from tests.scaleout.processes import FakeEngine, Router
from tests.service_process import ServiceProcess

DASHBOARD = DEPLOY / "grafana" / "judge-service.json"


def expressions() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [t["expr"] for p in panels for t in p.get("targets", [])]


def test_the_dashboard_file_is_the_generators_output() -> None:
    spec = importlib.util.spec_from_file_location(
        "build_dashboard", DEPLOY / "grafana" / "build_dashboard.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert DASHBOARD.read_text() == module.render(), "run python deploy/grafana/build_dashboard.py"


def test_every_expression_passes_promtool(tmp_path: Path) -> None:
    exprs = expressions()
    assert len(exprs) >= 20
    rules = {
        "groups": [
            {"name": "dashboard", "rules": [{"record": f"panel:{i}", "expr": e} for i, e in enumerate(exprs)]}
        ]
    }
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump(rules))
    done = run(tool("promtool"), "check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    path.write_text(
        yaml.safe_dump({"groups": [{"name": "x", "rules": [{"record": "x", "expr": "sum(rate(x[5m])"}]}]})
    )
    assert run(tool("promtool"), "check", "rules", str(path)).returncode != 0  # promtool does refuse


def test_dashboard_has_judge_router_and_vllm_rows() -> None:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    rows = [p["title"] for p in panels if p["type"] == "row"]
    assert rows == ["Judge service", "Reward hacking watch", "Router", "vLLM engines"]
    names = set().union(*(metric_names(e) for e in expressions()))
    needed = {
        "judge_groups_total",
        "judge_group_seconds_bucket",
        "judge_queue_depth",
        "judge_canary_outranked_total",
        "judge_length_bias_sum",
        "vllm:kv_cache_usage_perc",
    }
    needed |= {"vllm:prefix_cache_hits_total", "vllm_router_processed_requests_total"}
    assert needed <= names


def vllm_defined_names() -> set[str]:
    """Metric names the installed vLLM defines (as vLLM's own dashboards check), with the suffixes
    prometheus_client adds."""
    source = "".join(p.read_text() for p in (Path(vllm.__file__).parent / "v1" / "metrics").glob("*.py"))
    names = set(re.findall(r'"(vllm:[a-z_]+)"', source))
    return {n + suffix for n in names for suffix in ("", "_total", "_bucket", "_sum", "_count")}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[set[str]]:
    """Names from a live service that judged groups through a live router, whose engine then died (so
    that the router also retried and opened a circuit breaker)."""
    workdir = tmp_path_factory.mktemp("exported")
    engine = FakeEngine(workdir, "A")
    router = Router(workdir, [engine.url], "round_robin")
    service = ServiceProcess(
        workdir, backend="openai", openai_base_url=f"{router.url}/v1", served_model_name=MODEL
    ).start()
    try:
        for i in range(4):
            assert httpx.post(f"{service.url}/v1/judge", json=body(i, "x"), timeout=30).status_code == 200
        # A group with a canary and answers of different lengths: the run watch's metrics get values.
        answers = [{"id": f"a{j}", "text": MARK_ANSWER.format(j + 1) + " word" * j} for j in range(4)]
        watched = {**body(5, "x"), "answers": answers, "canaries": "on"}
        assert httpx.post(f"{service.url}/v1/judge", json=watched, timeout=30).status_code == 200
        engine.stop()
        assert httpx.post(f"{service.url}/v1/judge", json=body(9, "x"), timeout=60).status_code == 502
        names = exported_names(httpx.get(f"{service.url}/metrics").text)
        names |= exported_names(router.metrics())
    finally:
        service.stop()
        router.stop()
    yield names


def test_every_metric_named_is_exported(exported: set[str]) -> None:
    declared = {
        line.split()[2]
        for line in JudgeMetrics().render().decode().splitlines()
        if line.startswith("# TYPE ")
    }
    named = set().union(*(metric_names(e) for e in expressions())) | alert_metric_names()
    # A series that exists only once something was found (a run whose audit judge it parted from): the
    # service declares it (HELP and TYPE lines in its exposition), with no sample before.
    only_when_found = {"judge_audit_divergence_onset_step"} & declared
    known = exported | only_when_found | vllm_defined_names() | {"up"}
    assert named - known == set()
    assert {n for n in named if n.startswith("vllm_router_")} <= exported  # from the live router itself
