"""The render processes rationed: one render timeout for all of a grader run's templates (after a timeout,
or once their time adds up to it, the rest fail without asking a process), one template of a run at a
time, and waiting templates served in turns by caller. Renders here are scripted (their time is what they
report, not what they take) or fake processes that sleep, so the tests are fast and deterministic."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from judge_service.judging.llm.admission import ADMISSION_KEY
from judge_service.judging.rft import template_pool
from judge_service.judging.rft.grader import parse_config
from judge_service.judging.rft.run import GraderConfigError, RftRunner
from judge_service.judging.rft.template_pool import FairSlots, RenderPool, TemplateLimits
from judge_service.judging.rft.templates import Templates, TemplateVariableError

LIMITS = TemplateLimits(timeout_s=1.0, workers=2)
BOMB = "{{ lipsum(10**6) | length }}"
QUICK = "{{ sample.output_text | upper }}"


class ScriptedPool:
    """A render pool without processes: a template takes the seconds `costs` gives it (0.01 unless
    named) and is cut at its timeout, as the real pool cuts it; every request is recorded."""

    def __init__(self, costs: dict[str, float] | None = None) -> None:
        self.costs = costs or {}
        self.asked: list[tuple[str, str]] = []  # (caller, template)
        self.in_flight = self.most_in_flight = 0

    async def ask(
        self, message: dict[str, Any], *, caller: str = "", timeout_s: float = 1.0
    ) -> dict[str, Any]:
        self.asked.append((caller, message["template"]))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0)  # the others may ask meanwhile
        self.in_flight -= 1
        cost = self.costs.get(message["template"], 0.01)
        if cost > timeout_s:
            message_text = f"it took longer than {timeout_s:g} s to render"
            return {"ok": False, "message": message_text, "timed_out": True, "seconds": timeout_s}
        return {"ok": True, "text": "rendered", "seconds": cost}

    def processes(self) -> int:
        return 0

    async def close(self) -> None:
        return None


def _scripted(costs: dict[str, float] | None = None) -> tuple[Templates, ScriptedPool]:
    templates = Templates(LIMITS)
    pool = ScriptedPool(costs)
    templates._pool = pool  # type: ignore[assignment]
    return templates, pool


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[RftRunner, ScriptedPool]]:
    templates, pool = _scripted({BOMB: 60.0, "{{ item.a | trim }}": 0.3})
    runner = RftRunner(model=None, pool=None, allow_python=False, templates=templates)
    yield runner, pool
    await runner.close()


def _check(name: str, template: str, reference: str | None = None) -> dict[str, Any]:
    reference = template if reference is None else reference
    return {
        "type": "string_check",
        "name": name,
        "input": template,
        "reference": reference,
        "operation": "eq",
    }


def _multi(templates: list[str]) -> Any:
    graders = {f"s{i}": _check(f"s{i}", template) for i, template in enumerate(templates)}
    return parse_config({"type": "multi", "name": "m", "graders": graders, "calculate_output": "s0"})


async def test_after_a_timeout_a_runs_other_templates_fail_without_a_process(
    scripted: tuple[RftRunner, ScriptedPool],
) -> None:
    runner, pool = scripted
    outcome = await runner.run(_multi([BOMB] * 32), "x", {})
    assert pool.asked == [("", BOMB)]  # one of the 64 renders, cut at the timeout
    assert outcome.reward is None and outcome.sub_rewards == {}  # every member failed...
    assert set(outcome.failures) == {"invalid_variable_error"}  # ...as invalid_variable_error
    assert "JUDGE_TEMPLATE_TIMEOUT_S" in outcome.failures["invalid_variable_error"]


async def test_a_runs_templates_share_one_timeout_of_render_time(
    scripted: tuple[RftRunner, ScriptedPool],
) -> None:
    runner, pool = scripted
    slow = "{{ item.a | trim }}"  # 0.3 s each: three fit in 1 s, the fourth is cut at the 0.1 s left
    outcome = await runner.run(_multi([slow] * 6), "x", {"a": "b"})
    assert len(pool.asked) == 4 and outcome.sub_rewards == {}
    assert set(outcome.failures) == {"invalid_variable_error"}
    again = await runner.run(_multi([slow]), "x", {"a": "b"})  # a fresh run, a fresh budget
    assert again.reward == 1.0 and len(pool.asked) == 6  # its input and reference, 0.6 s together


async def test_the_templates_after_a_timeout_say_why_they_were_not_rendered() -> None:
    templates, pool = _scripted({BOMB: 60.0})
    budget = templates.budget()
    with pytest.raises(TemplateVariableError, match=r"over its budget.*JUDGE_TEMPLATE_TIMEOUT_S"):
        await templates.render(BOMB, {"item": {}}, budget)
    with pytest.raises(TemplateVariableError, match=r"not rendered: .*used their 1 s of render time"):
        await templates.render(QUICK, {"sample": {"output_text": "x"}}, budget)
    assert await templates.render("{{ item.a }}", {"item": {"a": "plain"}}, budget) == "plain"  # no process
    assert pool.asked == [("", BOMB)]
    assert await templates.render(QUICK, {"sample": {"output_text": "x"}}) == "rendered"  # its own budget


async def test_a_runs_templates_render_one_at_a_time(scripted: tuple[RftRunner, ScriptedPool]) -> None:
    runner, pool = scripted
    outcome = await runner.run(_multi([QUICK] * 8), "x", {})
    assert outcome.reward == 1.0 and len(pool.asked) == 16 and pool.most_in_flight == 1
    await asyncio.gather(*(runner.run(_multi([QUICK] * 8), "x", {}) for _ in range(3)))
    assert pool.most_in_flight == 3  # runs do not wait for each other, only for the pool


async def test_validate_checks_a_configs_templates_within_one_budget(
    scripted: tuple[RftRunner, ScriptedPool],
) -> None:
    runner, pool = scripted
    with pytest.raises(GraderConfigError) as refused:
        await runner.validate(_multi([BOMB] + [f"{{{{ item.a{i} | trim }}}}" for i in range(31)]))
    assert refused.value.flag == "invalid_variable_error" and pool.asked == [("", BOMB)]


async def test_templates_render_in_the_turn_of_the_key_the_request_is_for(
    scripted: tuple[RftRunner, ScriptedPool],
) -> None:
    runner, pool = scripted
    ADMISSION_KEY.set("trainer-a")
    await runner.run(_multi([QUICK]), "x", {})
    assert {caller for caller, _ in pool.asked} == {"trainer-a"}


async def test_slots_go_round_robin_by_caller() -> None:
    slots = FairSlots(1)
    served: list[str] = []
    release = asyncio.Event()

    async def use(caller: str, hold: bool = False) -> None:
        async with slots.slot(caller):
            served.append(caller)
            if hold:
                await release.wait()

    holder = asyncio.create_task(use("attacker", hold=True))
    await asyncio.sleep(0)
    waiting = [asyncio.create_task(use("attacker")) for _ in range(20)]
    await asyncio.sleep(0)
    waiting.append(asyncio.create_task(use("victim")))
    await asyncio.sleep(0)
    assert slots.waiting() == 21
    release.set()
    await asyncio.gather(holder, *waiting)
    assert served[:3] == ["attacker", "attacker", "victim"]  # the one in turn before it, then the victim
    assert slots.waiting() == 0


async def test_a_cancelled_wait_passes_its_turn_on() -> None:
    slots = FairSlots(1)
    served: list[str] = []
    release = asyncio.Event()

    async def use(caller: str) -> None:
        async with slots.slot(caller):
            served.append(caller)
            await release.wait()

    holder = asyncio.create_task(use("a"))
    await asyncio.sleep(0)
    gone, kept = asyncio.create_task(use("b")), asyncio.create_task(use("c"))
    await asyncio.sleep(0)
    gone.cancel()
    release.set()
    await asyncio.gather(holder, kept)
    assert gone.cancelled() and served == ["a", "c"] and slots.waiting() == 0
    async with slots.slot("d"):  # the slot is free again
        pass


class _SleepingProcess:
    """A render process that takes 10 ms per template and renders it as itself."""

    alive = True

    async def ask(self, message: dict[str, Any], max_reply_bytes: int) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"ok": True, "text": message["template"]}

    async def kill(self) -> None:
        self.alive = False


async def test_the_pool_serves_a_single_render_before_anothers_many(monkeypatch: pytest.MonkeyPatch) -> None:
    async def start(limits: TemplateLimits) -> _SleepingProcess:
        return _SleepingProcess()

    monkeypatch.setattr(template_pool._Process, "start", start)
    pool = RenderPool(TemplateLimits(workers=1))
    finished: list[str] = []

    async def ask(caller: str, template: str) -> None:
        reply = await pool.ask({"op": "render", "template": template}, caller=caller)
        assert reply["ok"] and reply["seconds"] >= 0.01
        finished.append(reply["text"])

    many = [asyncio.create_task(ask("attacker", f"a{i}")) for i in range(30)]
    await asyncio.sleep(0)
    await asyncio.gather(*many, ask("victim", "v"))
    assert finished.index("v") <= 2, finished  # 30 in FIFO order
    await pool.close()
