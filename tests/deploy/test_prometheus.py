"""The alert rules pass promtool's checks and their own unit tests, and name only real metrics."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.deploy.conftest import DEPLOY, metric_names, run, tool

ALERTS = DEPLOY / "prometheus" / "alerts.yml"


def test_rules_pass_promtool_check() -> None:
    done = run(tool("promtool"), "check", "rules", str(ALERTS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 12 rules found" in done.stdout


def test_every_alert_has_unit_tests_and_they_pass() -> None:
    done = run(tool("promtool"), "test", "rules", "alerts-test.yml", cwd=ALERTS.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    tested = {
        case["alertname"]
        for test in yaml.safe_load((ALERTS.parent / "alerts-test.yml").read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    alerts = {r["alert"] for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]}
    assert tested == alerts  # each alert is shown to fire at least once


def test_a_broken_rule_or_a_wrong_expectation_fails(tmp_path: Path) -> None:
    broken = tmp_path / "alerts.yml"
    broken.write_text(ALERTS.read_text().replace("> 0.95", "> > 0.95", 1))
    assert run(tool("promtool"), "check", "rules", str(broken)).returncode != 0
    shutil.copy(ALERTS, tmp_path / "alerts.yml")
    wrong = (ALERTS.parent / "alerts-test.yml").read_text().replace("5% of answers", "6% of answers")
    (tmp_path / "alerts-test.yml").write_text(wrong)
    assert run(tool("promtool"), "test", "rules", "alerts-test.yml", cwd=tmp_path).returncode != 0


def test_the_compose_prometheus_config_is_valid(tmp_path: Path) -> None:
    shutil.copy(DEPLOY / "compose" / "prometheus.yml", tmp_path / "prometheus.yml")
    shutil.copy(ALERTS, tmp_path / "alerts.yml")
    done = run(tool("promtool"), "check", "config", str(tmp_path / "prometheus.yml"))
    assert done.returncode == 0, done.stdout + done.stderr


def alert_metric_names() -> set[str]:
    rules = [r for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]
    return set().union(*(metric_names(r["expr"]) for r in rules))
