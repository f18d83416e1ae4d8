"""The kustomize overlays render with `kubectl kustomize`, every object passes the Kubernetes schemas
(kubernetes-validate, strict), and the objects do what a rolling, draining, autoscaled fleet needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from judge_service.config import Settings
from tests.deploy.conftest import DEPLOY, run, tool

KUBERNETES = DEPLOY / "kubernetes"
VERSION = "1.33.0"


def render(overlay: Path) -> list[dict[str, Any]]:
    done = run(tool("kubectl"), "kustomize", str(overlay))
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def by_kind(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"].startswith(name))


@pytest.mark.parametrize("overlay", ["cpu-demo", "gpu"])
def test_each_overlay_renders_to_objects_the_schemas_accept(overlay: str) -> None:
    objects = render(KUBERNETES / "overlays" / overlay)
    assert len(objects) >= 9
    for obj in objects:
        kubernetes_validate.validate(obj, VERSION, strict=True)


def test_the_validator_refuses_a_broken_object() -> None:
    deployment = by_kind(render(KUBERNETES / "overlays" / "gpu"), "Deployment", "judge-service")
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, VERSION, strict=True)
    deployment["spec"]["replicas"] = 2
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGett"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, VERSION, strict=True)


@pytest.mark.parametrize("overlay", ["cpu-demo", "gpu"])
def test_replicas_drain_before_they_stop_and_scale_on_their_queue(overlay: str) -> None:
    objects = render(KUBERNETES / "overlays" / overlay)
    config = by_kind(objects, "ConfigMap", "judge-service")["data"]
    pod = by_kind(objects, "Deployment", "judge-service")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    pause_s = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod["terminationGracePeriodSeconds"] > pause_s + float(config["JUDGE_DRAIN_TIMEOUT_S"])
    env = {e["name"]: e for e in container["env"]}
    assert env["JUDGE_DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"] == "url"
    budget = by_kind(objects, "PodDisruptionBudget", "judge-service")["spec"]
    assert budget["minAvailable"] >= 1
    job = by_kind(objects, "Job", "judge-service-migrate")["spec"]["template"]["spec"]
    assert job["containers"][0]["args"] == ["migrate"]
    scaler = by_kind(objects, "HorizontalPodAutoscaler", "judge-service")["spec"]
    assert scaler["metrics"][0]["pods"]["metric"]["name"] == "judge_queue_depth"
    assert config["JUDGE_MEMBER_ASSEMBLY"] == "shared"


def test_the_gpu_overlay_judges_through_the_router_over_the_engines() -> None:
    objects = render(KUBERNETES / "overlays" / "gpu")
    config = by_kind(objects, "ConfigMap", "judge-service")["data"]
    assert config["JUDGE_BACKEND"] == "openai"
    assert config["JUDGE_OPENAI_BASE_URL"] == "http://vllm-router:8080/v1"
    engines = by_kind(objects, "StatefulSet", "vllm")["spec"]
    args = by_kind(objects, "Deployment", "vllm-router")["spec"]["template"]["spec"]["containers"][0]["args"]
    workers = args[args.index("--worker-urls") + 1 :]
    assert workers == [f"http://vllm-{i}.vllm:8000" for i in range(engines["replicas"])]
    limits = engines["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "1"


@pytest.mark.parametrize("overlay", ["cpu-demo", "gpu"])
def test_replicas_answer_to_the_names_of_their_service(overlay: str) -> None:
    """The Host check (JUDGE_ALLOWED_HOSTS) lets in every name the Service is called by in the cluster."""
    objects = render(KUBERNETES / "overlays" / overlay)
    service = by_kind(objects, "Service", "judge-service")["metadata"]["name"]
    (container,) = by_kind(objects, "Deployment", "judge-service")["spec"]["template"]["spec"]["containers"]
    names = [e["name"] for e in container["env"]]
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert names.index("POD_NAMESPACE") < names.index("JUDGE_ALLOWED_HOSTS")  # expanded in order
    allowed = env["JUDGE_ALLOWED_HOSTS"]["value"].split(",")
    namespaced = f"{service}.$(POD_NAMESPACE)"
    pods = by_kind(objects, "Service", "judge-service-pods")  # every replica, ready or not (an asleep one)
    assert pods["spec"]["publishNotReadyAddresses"] is True and pods["spec"]["clusterIP"] == "None"
    headless = pods["metadata"]["name"]
    assert allowed == [
        service,
        namespaced,
        f"{namespaced}.svc",
        f"{namespaced}.svc.cluster.local",
        headless,
        f"{headless}.$(POD_NAMESPACE).svc.cluster.local",
    ]
    settings = Settings(allowed_hosts=env["JUDGE_ALLOWED_HOSTS"]["value"].replace("$(POD_NAMESPACE)", "ml"))
    assert settings.allowed_hosts is not None
