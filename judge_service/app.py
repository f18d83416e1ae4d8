"""create_app(settings): the only place that builds concrete objects and wires them together."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from judge_service.api import engine_routes, health, quality, retention_routes, routes
from judge_service.api.compat import router as compat
from judge_service.api.errors import install_error_handlers
from judge_service.api.middleware.auth import ApiKeyAuth, public_paths
from judge_service.api.middleware.drain import DrainGate, DrainState
from judge_service.api.middleware.hosts import HostPolicy
from judge_service.api.middleware.keys import KeyRing, ShareLimits, parse_keys
from judge_service.api.middleware.limits import RequestBody
from judge_service.api.middleware.request_metrics import RequestMetrics
from judge_service.api.scopes import gate_routes
from judge_service.api.shares import KeyShares
from judge_service.assembly import build_assembly
from judge_service.backends.base import JudgeBackend
from judge_service.backends.factory import build_backend
from judge_service.backends.lifecycle import EngineLifecycle, GatedBackend
from judge_service.backends.readiness import Readiness, follow_backend
from judge_service.config import Settings, parse_allowed_hosts
from judge_service.judging.base import Grader
from judge_service.judging.code.grader import load_code_grader
from judge_service.judging.code.pool import WorkerPool
from judge_service.judging.code.sandbox import Sandbox
from judge_service.judging.code.spec import parse_code_graders
from judge_service.judging.comparison.grader import KNOCKOUT, PAIRWISE, ComparisonGrader
from judge_service.judging.jury.build import build_jury
from judge_service.judging.llm.admission import GroupAdmission
from judge_service.judging.llm.caller import JudgeCaller
from judge_service.judging.llm.judge import LLMJudge
from judge_service.judging.llm.wake_check import ProbeVerifier
from judge_service.judging.registry import GraderRegistry
from judge_service.judging.rft.grader import RftConfigGrader, parse_rft_graders
from judge_service.judging.rft.model import ModelGrading
from judge_service.judging.rft.run import GraderConfigError, RftRunner
from judge_service.judging.rft.template_pool import TemplateLimits
from judge_service.judging.rft.templates import Templates
from judge_service.metrics import JudgeMetrics
from judge_service.service import JudgeService
from judge_service.service.retention import Retention
from judge_service.store.base import JudgementStore
from judge_service.store.factory import build_store
from judge_service.ui import pages, signin
from judge_service.watch.audit_judge import build_audit_judge
from judge_service.watch.audit_summaries import AuditSummaries
from judge_service.watch.auditor import Auditor
from judge_service.watch.canaries import CanaryPolicy

log = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None,
    *,
    backend: JudgeBackend | None = None,
    store: JudgementStore | None = None,
    metrics: JudgeMetrics | None = None,
    on_fatal: Callable[[], None] | None = None,
) -> FastAPI:
    """Build the service. `backend`, `store` and `metrics` replace the configured ones (tests, benchmarks);
    `on_fatal` stops the server when the in-process engine dies (cli.py passes it)."""
    settings = settings or Settings()
    metrics = metrics or JudgeMetrics()
    drain = DrainState(settings.max_requests_in_flight)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        judge_backend = backend or build_backend(settings, metrics)
        judgement_store = store or build_store(settings)
        await judgement_store.open()
        app.state.store = judgement_store
        readiness = Readiness(metrics, backend=settings.backend)
        metrics.admission_limit.labels(limit="in_flight").set(settings.max_groups_in_flight)
        metrics.admission_limit.labels(limit="queued").set(settings.max_groups_queued)
        admission = GroupAdmission(settings.max_groups_in_flight, settings.max_groups_queued, metrics)
        # The wake check judges its probe groups on the engine itself, without a slot: it runs while the
        # engine is closed to everything else.
        probe_caller = JudgeCaller.configured(judge_backend, metrics, settings, settings)
        probing = LLMJudge(
            probe_caller, admission=None, metrics=metrics, readiness=readiness, name="wake-check"
        )
        lifecycle = EngineLifecycle(
            judge_backend,
            metrics,
            busy_slots=lambda: admission.busy_slots,
            hold_s=settings.sleep_hold_s,
            drain_timeout_s=settings.sleep_drain_timeout_s,
            verifier=ProbeVerifier(probing) if settings.wake_check else None,
        )
        admission.set_gate(lifecycle)  # groups wait for a sleeping engine before they take a slot
        app.state.lifecycle = lifecycle
        engine = GatedBackend(judge_backend, lifecycle)  # every other call waits for it too
        caller = JudgeCaller.configured(engine, metrics, settings, settings)
        judge = LLMJudge(caller, admission=admission, metrics=metrics, readiness=readiness)
        # Comparison grading runs on the judge's engine and shares its slots.
        comparing = [
            ComparisonGrader(caller, mode=mode, admission=admission, metrics=metrics, readiness=readiness)
            for mode in (PAIRWISE, KNOCKOUT)
        ]
        app.state.readiness = readiness
        sandbox = Sandbox.from_setting(settings.code_sandbox)
        if settings.code_graders or settings.allow_inline_python:
            await sandbox.check()  # refuses to start code graders it cannot sandbox, naming the way out
        workers = settings.resolved_code_workers()
        replaced = metrics.code_workers_replaced.inc
        code_pool = WorkerPool(workers, sandbox, on_replace=replaced)
        # Inline source is the caller's: a fresh worker per call, never one a configured grader uses.
        python_pool = WorkerPool(workers, sandbox, reuse=False, on_replace=replaced)
        rft_runner = RftRunner(
            model=ModelGrading(engine),
            pool=python_pool,
            allow_python=settings.allow_inline_python,
            templates=Templates(
                TemplateLimits(
                    timeout_s=settings.template_timeout_s,
                    max_output_chars=settings.template_max_output_chars,
                    memory_mb=settings.template_memory_mb,
                    workers=settings.template_workers,
                )
            ),
        )
        app.state.rft_runner = rft_runner
        try:  # a start that fails here (a grader that cannot load, two graders of one name) stops the workers
            configured = await _configured_graders(settings, code_pool, rft_runner, metrics)
            jury = build_jury(
                settings, metrics, local_backend=engine, local_readiness=readiness, admission=admission
            )
            juries = [] if jury is None else [jury.grader]
            graders = GraderRegistry.with_rule_graders(judge, *comparing, *juries, *configured)
            audit = build_audit_judge(settings, metrics, local_backend=engine, local_readiness=readiness)
        except BaseException:
            await code_pool.close()
            await python_pool.close()
            await rft_runner.close()
            raise
        summaries = AuditSummaries(judgement_store)  # the runs' audit figures, read once for many asks
        auditor = (
            None
            if audit is None
            else Auditor(
                audit,
                judgement_store,
                metrics,
                rate=settings.audit_rate,
                backlog=settings.audit_backlog,
                concurrency=settings.audit_concurrency,
                busy=lambda: admission.saturated or not lifecycle.awake,
                on_stored=summaries.changed,
            )
        )
        app.state.auditor = auditor
        service = JudgeService(
            graders=graders,
            store=judgement_store,
            metrics=metrics,
            idempotency_lease_s=settings.idempotency_lease_s,
            canaries=CanaryPolicy(settings.canary_rate, settings.resolved_canary_kinds()),
            auditor=auditor,
            audit_summaries=summaries,
        )
        app.state.service = service
        assembly = build_assembly(
            settings.resolved_member_assembly(), service, judgement_store, metrics, settings
        )
        app.state.assembly = assembly
        retention = Retention(
            judgement_store,
            metrics,
            days=settings.retention_days,
            interval_s=settings.prune_interval_s,
            batch_rows=settings.prune_batch_rows,
            pause_s=settings.prune_pause_s,
        )
        app.state.retention = retention
        keeping = asyncio.create_task(retention.keep())  # returns at once without JUDGE_RETENTION_DAYS
        drain.reopen()

        def follow(
            backend: JudgeBackend, ready: Readiness, fatal: Callable[[], None] | None
        ) -> asyncio.Task[None]:
            return asyncio.create_task(
                follow_backend(
                    backend,
                    ready,
                    interval_s=settings.health_interval_s,
                    exit_after_s=settings.dead_engine_exit_s,
                    on_fatal=fatal,
                )
            )

        app.state.jury = None if jury is None else jury.grader
        endpoints = [] if jury is None else list(jury.endpoints)
        if audit is not None and audit.endpoint is not None:
            endpoints.append(audit.endpoint)
        if auditor is not None:
            auditor.start()
        following = [follow(judge_backend, readiness, on_fatal)]
        # A jury judge's endpoint is followed as the service's own backend is, but is never fatal.
        following += [follow(endpoint.backend, endpoint.readiness, None) for endpoint in endpoints]

        async def shut_down() -> None:
            """Drain: on the first stop signal with the listener still open (server/draining.py), and again,
            at once, when the lifespan ends."""
            lifecycle.stop()  # groups held for a sleeping engine's wake get 503 now, not at their hold's end
            await assembly.shut_down()  # members still waiting for their group get 503 and retry
            await drain.drain(settings.drain_timeout_s)  # groups in flight finish and are stored

        app.state.shut_down = shut_down
        # What start-up built lives as long as the service: keep it out of the collector's full passes, which
        # otherwise walk it again and again under load (about 0.05 ms a group; vLLM does the same).
        gc.freeze()
        try:
            yield
        finally:
            gc.unfreeze()  # a process that builds another app (tests) lets this one's cycles be collected
            await shut_down()
            if auditor is not None:
                await auditor.close()  # after the drain: groups stored by then were offered to it
            for task in following:
                task.cancel()
            keeping.cancel()
            await asyncio.gather(keeping, return_exceptions=True)  # no batch left half-sent to the store
            await code_pool.close()
            await python_pool.close()
            await rft_runner.close()
            await judge_backend.close()
            for endpoint in endpoints:
                await endpoint.backend.close()
            await judgement_store.close()

    app = FastAPI(
        title="Group-wise judge service",
        version="0.1.0",
        description="Grades a group of answers in one judge call (GRPO rewards) and stores every judgement.",
        lifespan=lifespan,
    )
    app.state.metrics = metrics
    app.state.settings = settings
    app.state.drain = drain
    install_error_handlers(app)
    # Middleware added later runs earlier: request counting sees every refusal below. The gate counts
    # requests whose body the reader outside it has read in full (a slow sender holds no slot).
    app.add_middleware(DrainGate, state=drain)
    app.add_middleware(RequestBody, max_bytes=settings.max_request_bytes, refusing=drain.refusing)
    app.state.keys = keys = KeyRing(
        parse_keys(settings.api_keys),
        keys_file=settings.api_keys_file,
        defaults=ShareLimits(settings.key_max_groups_in_flight, settings.key_groups_per_minute),
        session_secret=settings.session_secret,
    )
    app.state.shares = KeyShares()
    hosts = HostPolicy(settings.host, parse_allowed_hosts(settings.allowed_hosts or ""))
    app.add_middleware(ApiKeyAuth, keys=keys, public_paths=public_paths(settings.metrics_public), hosts=hosts)
    app.add_middleware(RequestMetrics, metrics=metrics, log_requests=settings.access_log)
    app.include_router(routes.router)
    app.include_router(pages.router)
    app.include_router(signin.router)
    app.include_router(health.router)
    app.include_router(quality.router)
    app.include_router(retention_routes.router)
    app.include_router(engine_routes.router)
    app.include_router(compat.router)
    app.include_router(compat.fine_tuning)
    gate_routes(app)  # after every route is in: one without a scope stops the app here

    return app


async def _configured_graders(
    settings: Settings, pool: WorkerPool, runner: RftRunner, metrics: JudgeMetrics
) -> list[Grader[Any]]:
    """The graders JUDGE_CODE_GRADERS and JUDGE_RFT_GRADERS name; ValueError (the service does not start)
    for one that cannot load or run."""
    graders: list[Grader[Any]] = []
    if settings.code_graders:
        specs = parse_code_graders(settings.code_graders)
        graders.extend([await load_code_grader(spec, pool, metrics) for spec in specs])
    if settings.rft_graders:
        for name, config in parse_rft_graders(settings.rft_graders).items():
            try:
                await runner.validate(config)
            except GraderConfigError as exc:
                raise ValueError(f"JUDGE_RFT_GRADERS: grader {name!r}: {exc}") from exc
            graders.append(RftConfigGrader(name, config, runner))
    return graders
