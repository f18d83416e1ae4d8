"""What template bombs cost everyone else, and what a plain template costs to render.

    .venv/bin/python -m benchmarks template_budget [--seconds 8] [--bombers 10]

1. /healthz under bombs: the real server (`python -m judge_service serve`, fake judge, default template
   settings: 1 s timeout, 2 render processes) as a child process. A prober thread asks /healthz every
   20 ms on its own connection: for `--seconds` with nothing else running (idle), then as long while
   `--bombers` connections each send template bombs in a closed loop to /v1/fine_tuning/alpha/graders/run
   (cycling through loops over the caller's list that only the timeout ends, 7 ** 30000000, nested
   range(100000), 'x' * 300000000 and a 6 MB output), then idle again. p50/p99/max of the probes per phase,
   and the bombs answered with `invalid_variable_error`.
2. Render cost, in this process, per call (the mean of many): a plain template as main rendered it before
   the budget (Jinja2's sandbox, compiled once and cached, rendered in the loop) and as it renders now
   (Templates.render: the in-process fast path, awaited); and, for scale, a template with a filter, which
   now renders in a render process (a round trip over its pipes).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx
from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from benchmarks.experiment import Experiment, Outcome, option
from benchmarks.report import latency_summary, log, markdown_table
from benchmarks.servers import server_process, workdir
from judge_service.judging.rft.budget import finalize
from judge_service.judging.rft.templates import Templates

SLOW = (
    "{% for a in item.xs %}{% for b in item.xs %}{% for c in item.xs %}{% endfor %}{% endfor %}{% endfor %}"
)
BOMBS: list[tuple[str, dict[str, Any]]] = [
    (SLOW, {"xs": list(range(2000))}),
    ("{{ (7 ** 30000000) % 10 }}", {}),
    ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", {}),
    ("{{ ('x' * 300000000) | length }}", {}),
    ("{% for i in range(100) %}{{ item.text }}{% endfor %}", {"text": "y" * 60_000}),
]
NAMESPACES: dict[str, Any] = {
    "item": {"answer": "Paris", "facts": {"plan": "Business"}},
    "sample": {"output_text": "The capital is Paris.", "output_json": None},
}
PLAIN = {
    "one lookup": "{{ sample.output_text }}",
    "prompt with two lookups": "Grade the answer.\nAnswer: {{ sample.output_text }}\n"
    "Plan: {{ item.facts.plan }}",
}
FILTERED = "{{ sample.output_text | lower }}"


class Prober(threading.Thread):
    """GET /healthz every `interval_s` on its own connection; latencies of the current phase."""

    def __init__(self, url: str, interval_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.url, self.interval_s = url, interval_s
        self.latencies: list[float] = []
        self.failures = 0
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=120) as client:
            while not self.stop.is_set():
                started = time.perf_counter()
                ok = client.get("/healthz").status_code == 200
                self.latencies.append(time.perf_counter() - started)
                self.failures += not ok
                time.sleep(self.interval_s)

    def phase(self) -> list[float]:
        taken, self.latencies = self.latencies, []
        return taken


async def _bomb(url: str, bombers: int, seconds: float) -> tuple[int, int]:
    """(bombs answered, of those flagged invalid_variable_error)."""
    answered = flagged = 0
    deadline = time.perf_counter() + seconds
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:

        async def bomber(first: int) -> None:
            nonlocal answered, flagged
            turn = first
            while time.perf_counter() < deadline:
                template, item = BOMBS[turn % len(BOMBS)]
                turn += 1
                grader = {
                    "type": "string_check",
                    "name": "b",
                    "input": template,
                    "reference": "x",
                    "operation": "eq",
                }
                response = await client.post(
                    "/v1/fine_tuning/alpha/graders/run",
                    json={"grader": grader, "model_sample": "x", "item": item},
                )
                response.raise_for_status()
                answered += 1
                flagged += response.json()["metadata"]["errors"]["invalid_variable_error"] is True

        await asyncio.gather(*(bomber(i) for i in range(bombers)))
    return answered, flagged


def _healthz(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    with server_process({"JUDGE_BACKEND": "fake"}, folder / "service.log") as (url, _service):
        prober = Prober(url)
        prober.start()
        phases: dict[str, Any] = {}
        log(f"idle for {args.seconds} s")
        time.sleep(args.seconds)
        phases["idle"] = latency_summary(prober.phase())
        log(f"{args.bombers} bombers for {args.seconds} s")
        answered, flagged = asyncio.run(_bomb(url, args.bombers, args.seconds))
        phases[f"{args.bombers} bombers"] = latency_summary(prober.phase()) | {
            "bombs_answered": answered,
            "bombs_flagged": flagged,
        }
        log(f"idle again for {args.seconds} s")
        time.sleep(args.seconds)
        phases["idle after"] = latency_summary(prober.phase())
        prober.stop.set()
        prober.join()
        phases["probe_failures"] = prober.failures
    return phases


async def _per_call_us(render: Any, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await render()
    return (time.perf_counter() - started) / calls * 1e6


async def _render_costs(calls: int) -> dict[str, dict[str, float]]:
    jinja = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, finalize=finalize)
    compiled = lru_cache(maxsize=1024)(jinja.from_string)  # main's judging/rft/templates.py before the budget
    templates = Templates()
    costs: dict[str, dict[str, float]] = {}
    try:
        for name, template in PLAIN.items():

            async def before(template: str = template) -> str:
                return str(compiled(template).render(**NAMESPACES))

            async def now(template: str = template) -> str:
                return await templates.render(template, NAMESPACES)

            assert await before() == await now()
            for _ in range(3):  # alternate: the machine is shared
                for label, render in (("before_us", before), ("now_us", now)):
                    cost = await _per_call_us(render, calls)
                    costs.setdefault(name, {})[label] = min(costs.get(name, {}).get(label, cost), cost)
        await templates.render(FILTERED, NAMESPACES)  # the render process started

        async def filtered() -> str:
            return await templates.render(FILTERED, NAMESPACES)

        costs["a filter (render process)"] = {"now_us": await _per_call_us(filtered, max(calls // 20, 200))}
    finally:
        await templates.close()
    return costs


def run(args: argparse.Namespace) -> Outcome:
    with workdir("templates") as folder:
        healthz = _healthz(args, folder)
    costs = asyncio.run(_render_costs(args.calls))
    rows: list[list[Any]] = []
    for phase, summary in healthz.items():
        if isinstance(summary, dict):
            bombs = (
                f"{summary['bombs_flagged']}/{summary['bombs_answered']}"
                if "bombs_answered" in summary
                else "-"
            )
            rows.append([phase, summary["n"], summary["p50_ms"], summary["p99_ms"], summary["max_ms"], bombs])
    table = markdown_table(
        ["/healthz while", "probes", "p50 ms", "p99 ms", "max ms", "bombs flagged/answered"], rows
    )
    table += "\n\n" + markdown_table(
        ["template", "before (us/render)", "now (us/render)"],
        [[name, cost.get("before_us", "-"), cost["now_us"]] for name, cost in costs.items()],
    )
    return Outcome({"healthz": healthz, "render_costs": costs}, table)


EXPERIMENT = Experiment(
    options=[
        option("--seconds", 8.0, "each phase"),
        option("--bombers", 10),
        option("--calls", 20_000, "renders per cost measurement"),
    ],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
