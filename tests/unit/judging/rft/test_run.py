"""RFT grader configs run against hand-computed results: each string operation, the similarity metrics,
model graders answered by the (scripted) judge model, multi formulas, python in the worker pool, and the
error flags of everything that cannot score."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from judge_service.backends.fake import FakeBackend
from judge_service.judging.code.pool import WorkerPool
from judge_service.judging.rft.grader import parse_config, parse_rft_graders
from judge_service.judging.rft.model import ModelGrading
from judge_service.judging.rft.run import GraderConfigError, PythonNotAllowed, RftRunner


@pytest.fixture
async def pool() -> AsyncIterator[WorkerPool]:
    workers = WorkerPool(1)
    yield workers
    await workers.close()


@pytest.fixture
async def runner(pool: WorkerPool) -> AsyncIterator[RftRunner]:
    backend = FakeBackend()
    await backend.start()
    runner = RftRunner(model=ModelGrading(backend), pool=pool, allow_python=True)
    yield runner
    await runner.close()


async def _run(
    runner: RftRunner, config: dict[str, Any], sample: str, item: dict[str, Any] | None = None
) -> Any:
    return await runner.run(parse_config(config), sample, item or {})


def _check(
    operation: str, input: str = "{{sample.output_text}}", reference: str = "{{item.answer}}"
) -> dict[str, Any]:
    return {
        "type": "string_check",
        "name": "s",
        "input": input,
        "reference": reference,
        "operation": operation,
    }


@pytest.mark.parametrize(
    ("operation", "sample", "answer", "reward"),
    [
        ("eq", "Paris", "Paris", 1.0),
        ("eq", "paris", "Paris", 0.0),
        ("ne", "Lyon", "Paris", 1.0),
        ("ne", "Paris", "Paris", 0.0),
        ("like", "It is Paris.", "Paris", 1.0),
        ("like", "It is paris.", "Paris", 0.0),
        ("ilike", "It is PARIS.", "Paris", 1.0),
        ("ilike", "It is Lyon.", "Paris", 0.0),
    ],
)
async def test_string_check(
    runner: RftRunner, operation: str, sample: str, answer: str, reward: float
) -> None:
    outcome = await _run(runner, _check(operation), sample, {"answer": answer})
    assert outcome.reward == reward and not outcome.failures


async def test_a_missing_item_field_is_invalid_variable_error(runner: RftRunner) -> None:
    outcome = await _run(runner, _check("eq"), "Paris", {"city": "Paris"})
    assert outcome.reward is None
    assert outcome.error_flags()["invalid_variable_error"] is True
    assert "answer" in outcome.failures["invalid_variable_error"]


def _similarity(metric: str) -> dict[str, Any]:
    return {
        "type": "text_similarity",
        "name": "sim",
        "input": "{{sample.output_text}}",
        "reference": "{{item.reference}}",
        "evaluation_metric": metric,
    }


@pytest.mark.parametrize(
    ("metric", "sample", "reference", "reward"),
    [
        # ROUGE-L F1 = 2 * LCS / (a + r): "the cat sat" vs "the cat sat down" -> 2*3/7
        ("rouge_l", "the cat sat", "the cat sat down", 6 / 7),
        # ROUGE-1 F1 with 3 shared unigrams, P = 3/3, R = 3/4 -> 6/7; ROUGE-2: 2 shared bigrams, 2/2, 2/3
        ("rouge_1", "the cat sat", "the cat sat down", 6 / 7),
        ("rouge_2", "the cat sat", "the cat sat down", 0.8),
        ("rouge_5", "the cat sat", "the cat sat down", 0.0),
        # Indel similarity: "abc" vs "abd" -> 1 - 2/6
        ("fuzzy_match", "abc", "abd", 2 / 3),
        ("bleu", "the cat sat on the mat", "the cat sat on the mat", 1.0),
        ("gleu", "the cat sat on the mat", "the cat sat on the mat", 1.0),
    ],
)
async def test_text_similarity(
    runner: RftRunner, metric: str, sample: str, reference: str, reward: float
) -> None:
    outcome = await _run(runner, _similarity(metric), sample, {"reference": reference})
    assert outcome.reward == pytest.approx(reward) and not outcome.failures


@pytest.mark.parametrize("metric", ["cosine", "meteor"])
async def test_unsupported_metrics_are_refused_by_name(runner: RftRunner, metric: str) -> None:
    with pytest.raises(GraderConfigError, match=f"{metric}.*not supported"):
        await runner.validate(parse_config(_similarity(metric)))
    outcome = await _run(runner, _similarity(metric), "a", {"reference": "a"})
    assert outcome.reward is None and "not supported" in outcome.failures["other_error"]


SCORE_MODEL = {
    "type": "score_model",
    "name": "tone",
    "model": "gpt-4o-2024-08-06",
    "input": [
        {"role": "system", "content": "Score the tone from 1 to 5."},
        {"role": "user", "content": [{"type": "input_text", "text": "Answer: {{sample.output_text}}"}]},
    ],
    "range": [1, 5],
}
LABEL_MODEL = {
    "type": "label_model",
    "name": "polite",
    "model": "gpt-4o",
    "input": [{"role": "developer", "content": "Label: {{sample.output_text}}"}],
    "labels": ["polite", "rude"],
    "passing_labels": ["polite"],
}


async def test_score_model_is_answered_by_the_judge_model(runner: RftRunner) -> None:
    outcome = await _run(runner, SCORE_MODEL, "Thanks! [fake judge: score 4]")
    assert outcome.reward == 4.0 and outcome.model == "fake-judge" and outcome.token_usage > 0
    out_of_range = await _run(runner, SCORE_MODEL, "[fake judge: score 9]")
    assert out_of_range.reward is None and "model_grader_parse_error" in out_of_range.failures


async def test_label_model_passes_on_passing_labels(runner: RftRunner) -> None:
    assert (await _run(runner, LABEL_MODEL, "Hi [fake judge: label polite]")).reward == 1.0
    assert (await _run(runner, LABEL_MODEL, "Go away [fake judge: label rude]")).reward == 0.0


async def test_model_grader_failures_set_the_server_error_flag(pool: WorkerPool) -> None:
    from judge_service.errors import JudgeBackendError

    backend = FakeBackend(script=[JudgeBackendError("engine gone")])
    runner = RftRunner(model=ModelGrading(backend), pool=pool, allow_python=False)
    outcome = await _run(runner, SCORE_MODEL, "x")
    flags = outcome.error_flags()
    assert outcome.reward is None and flags["model_grader_server_error"] is True
    assert flags["model_grader_server_error_details"] == "engine gone"


def _multi(calculate_output: str) -> dict[str, Any]:
    return {
        "type": "multi",
        "name": "combined",
        "graders": {
            "exact": _check("eq"),
            "sim": _similarity("rouge_l") | {"reference": "{{item.answer}}"},
        },
        "calculate_output": calculate_output,
    }


async def test_multi_combines_sub_rewards_with_its_formula(runner: RftRunner) -> None:
    outcome = await _run(
        runner, _multi("0.5 * exact + 0.5 * sim"), "the cat sat", {"answer": "the cat sat down"}
    )
    assert outcome.sub_rewards == {"exact": 0.0, "sim": pytest.approx(6 / 7)}
    assert outcome.reward == pytest.approx(3 / 7)


async def test_a_formula_that_is_not_arithmetic_is_a_formula_parse_error(runner: RftRunner) -> None:
    config = _multi("__import__('os').getpid()")
    with pytest.raises(GraderConfigError, match="may be called"):
        await runner.validate(parse_config(config))
    outcome = await _run(runner, config, "x", {"answer": "x"})
    assert outcome.reward is None and outcome.error_flags()["formula_parse_error"] is True


PYTHON = {
    "type": "python",
    "name": "py",
    "source": "def grade(sample, item):\n"
    "    return 1.0 if sample['output_text'] == item['answer'] else 0.25\n",
}


async def test_python_runs_in_the_pool(runner: RftRunner) -> None:
    assert (await _run(runner, PYTHON, "42", {"answer": "42"})).reward == 1.0
    assert (await _run(runner, PYTHON, "41", {"answer": "42"})).reward == 0.25
    raising = PYTHON | {"source": "def grade(sample, item):\n    return 1 / 0\n"}
    outcome = await _run(runner, raising, "x")
    assert outcome.reward is None
    assert "ZeroDivisionError" in outcome.error_flags()["python_grader_runtime_error_details"]


async def test_python_is_refused_unless_allowed(pool: WorkerPool) -> None:
    runner = RftRunner(model=None, pool=pool, allow_python=False)
    with pytest.raises(PythonNotAllowed, match="JUDGE_ALLOW_INLINE_PYTHON"):
        await runner.validate(parse_config(PYTHON))
    outcome = await _run(runner, PYTHON, "42", {"answer": "42"})
    assert outcome.reward is None and outcome.error_flags()["python_grader_server_error"] is True


def test_settings_json_names_configs() -> None:
    configs = parse_rft_graders('{"capital": ' + str(_check("eq")).replace("'", '"') + "}")
    assert list(configs) == ["capital"]
    with pytest.raises(ValueError, match="grader name"):
        parse_rft_graders('{"Bad Name": {}}')
    with pytest.raises(ValueError, match="capital"):
        parse_rft_graders('{"capital": {"type": "string_check"}}')


@pytest.mark.parametrize(
    ("config", "item"),
    [
        (_check("eq", input="{{ (7 ** 30000000) % 10 }}"), {}),
        (
            _check(
                "eq", input="{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
            ),
            {},
        ),
        (_check("eq", input="{{ (item.text * item.times) | length }}"), {"text": "x", "times": 10**9}),
        (
            _similarity("rouge_l") | {"input": "{% for i in range(2000) %}{{ item.text }}{% endfor %}"},
            {"text": "y" * 1000},
        ),
        (SCORE_MODEL | {"input": [{"role": "user", "content": "{{ 'x' * 10 ** 9 }}"}]}, {}),
    ],
)
async def test_templates_over_their_budget_are_invalid_variable_error(
    runner: RftRunner, config: dict[str, Any], item: dict[str, Any]
) -> None:
    outcome = await _run(runner, config, "x", item)
    assert outcome.reward is None and outcome.model is None
    assert "over its budget" in outcome.failures["invalid_variable_error"]


async def test_validate_names_a_constant_bomb(runner: RftRunner) -> None:
    with pytest.raises(GraderConfigError, match="bits") as refused:
        await runner.validate(
            parse_config(_multi("exact") | {"graders": {"exact": _check("eq", input="{{ 9 ** 999999 }}")}})
        )
    assert refused.value.flag == "invalid_variable_error"
