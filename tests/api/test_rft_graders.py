"""RFT grader configs through the API: the real `openai` package's fine_tuning.alpha.graders.run and
.validate against a service process, python graders refused unless the operator allows them, and a config
named in JUDGE_RFT_GRADERS grading whole groups (unscored on an error flag, never 0)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import FakeBackend
from tests.api.conftest import make_client, wait_ready
from tests.service_process import ServiceProcess

STRING_CHECK = {
    "type": "string_check",
    "name": "capital",
    "input": "{{sample.output_text}}",
    "reference": "{{item.answer}}",
    "operation": "ilike",
}
MULTI = {
    "type": "multi",
    "name": "capital_and_tone",
    "graders": {
        "capital": STRING_CHECK,
        "tone": {
            "type": "score_model",
            "name": "tone",
            "model": "gpt-4o-2024-08-06",
            "input": [{"role": "user", "content": "Rate the tone 0-10: {{sample.output_text}}"}],
            "range": [0, 10],
        },
    },
    "calculate_output": "0.6 * capital + 0.4 * tone / 10",
}
PYTHON = {
    "type": "python",
    "name": "py",
    "source": "def grade(sample, item):\n    return float(len(sample['output_text']) < item['max'])\n",
}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path_factory.mktemp("rft"), allow_inline_python=True, code_workers=1) as process:
        yield process


@pytest.fixture(scope="module")
def sdk(service: ServiceProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{service.url}/v1", api_key="unused", max_retries=0)


def test_openai_package_runs_a_string_check(sdk: openai.OpenAI) -> None:
    result = sdk.fine_tuning.alpha.graders.run(
        grader=STRING_CHECK, model_sample="The capital is PARIS.", item={"answer": "Paris"}
    )
    assert result.reward == 1.0
    assert result.metadata.name == "capital" and result.metadata.type == "string_check"
    assert result.metadata.errors.invalid_variable_error is False
    assert result.metadata.scores == {"capital": 1.0}


def test_openai_package_runs_a_multi_grader_with_the_judge_model(sdk: openai.OpenAI) -> None:
    result = sdk.fine_tuning.alpha.graders.run(
        grader=MULTI,  # type: ignore[arg-type]
        model_sample="Paris, of course! [fake judge: score 5]",
        item={"answer": "paris"},
    )
    assert result.sub_rewards == {"capital": 1.0, "tone": 5.0}
    assert result.reward == pytest.approx(0.6 + 0.4 * 0.5)
    assert result.metadata.sampled_model_name == "fake-judge"
    assert result.metadata.token_usage and result.metadata.token_usage > 0


def test_openai_package_sees_error_flags(sdk: openai.OpenAI) -> None:
    result = sdk.fine_tuning.alpha.graders.run(grader=STRING_CHECK, model_sample="Paris", item={"city": "x"})
    assert result.reward == 0.0 and result.metadata.errors.invalid_variable_error is True
    formula = MULTI | {"calculate_output": "__import__('os').getpid()"}
    result = sdk.fine_tuning.alpha.graders.run(grader=formula, model_sample="Paris", item={"answer": "x"})  # type: ignore[arg-type]
    assert result.reward == 0.0 and result.metadata.errors.formula_parse_error is True


def test_openai_package_runs_python_where_allowed(sdk: openai.OpenAI) -> None:
    result = sdk.fine_tuning.alpha.graders.run(grader=PYTHON, model_sample="short", item={"max": 10})
    assert result.reward == 1.0 and result.metadata.errors.python_grader_runtime_error is False


def test_openai_package_validates(sdk: openai.OpenAI) -> None:
    valid = sdk.fine_tuning.alpha.graders.validate(grader=STRING_CHECK)
    assert valid.grader is not None and valid.grader.name == "capital"
    with pytest.raises(openai.UnprocessableEntityError, match="formula"):
        sdk.fine_tuning.alpha.graders.validate(grader=MULTI | {"calculate_output": "capital.real"})  # type: ignore[arg-type]
    with pytest.raises(openai.UnprocessableEntityError, match="operation"):
        sdk.fine_tuning.alpha.graders.validate(grader=STRING_CHECK | {"operation": "contains"})  # type: ignore[arg-type]


def test_validate_refuses_python_nested_too_deeply_for_the_compiler(service: ServiceProcess) -> None:
    """100,000 unary minuses overflow the compiler's own stack: a 422 saying so, not a 500."""
    deep = PYTHON | {"source": "x = " + "-" * 100_000 + "1"}
    with httpx.Client(base_url=f"{service.url}/v1/fine_tuning/alpha/graders", timeout=30) as client:
        refused = client.post("/validate", json={"grader": deep})
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert "nested too deeply" in error["message"] and error["details"] == {
            "flag": "python_grader_runtime_error"
        }
        assert client.post("/validate", json={"grader": PYTHON}).status_code == 200
        assert httpx.get(f"{service.url}/readyz", timeout=10).status_code == 200


def test_inline_python_is_refused_by_default(client: TestClient) -> None:
    for route in ("run", "validate"):
        body: dict[str, Any] = {"grader": PYTHON}
        if route == "run":
            body |= {"model_sample": "x", "item": {"max": 3}}
        response = client.post(f"/v1/fine_tuning/alpha/graders/{route}", json=body)
        assert response.status_code == 403, response.text
        assert "JUDGE_ALLOW_INLINE_PYTHON" in response.json()["error"]["message"]


def test_a_python_config_cannot_be_named_while_python_is_off(tmp_path: Path) -> None:
    with (
        pytest.raises(ValueError, match="JUDGE_ALLOW_INLINE_PYTHON"),
        make_client(tmp_path, FakeBackend(), rft_graders=json.dumps({"py": PYTHON})),
    ):
        pass


def test_a_named_config_grades_groups(tmp_path: Path) -> None:
    configs = json.dumps({"capital": STRING_CHECK, "capital-tone": MULTI})
    with make_client(tmp_path, FakeBackend(), rft_graders=configs) as client:
        wait_ready(client)
        group = {
            "conversation": [{"role": "user", "content": "Capital of France?"}],
            "reference": "Paris",
            "answers": [
                {"id": "a", "text": "paris [fake judge: score 10]"},
                {"id": "b", "text": "Lyon [fake judge: score 5]"},
            ],
            "item": {"answer": "Paris"},
        }
        body = client.post("/v1/judge", json=group | {"grader": "capital"}).json()
        assert [a["score"] for a in body["answers"]] == [1.0, 0.0]
        blended = client.post("/v1/judge", json=group | {"grader": "capital-tone"}).json()
        assert [a["score"] for a in blended["answers"]] == [pytest.approx(1.0), pytest.approx(0.2)]
        assert blended["judge_model"] == "fake-judge"
        missing = client.post("/v1/judge", json=group | {"grader": "capital", "item": {}}).json()
        assert [a["score"] for a in missing["answers"]] == [None, None]
        assert "invalid_variable_error" in missing["answers"][0]["error"]
        listed = {g["name"]: g for g in client.get("/v1/graders").json()["items"]}
        assert listed["capital-tone"]["kind"] == "rft" and listed["capital-tone"]["runs_model"] is True
