"""Command line: `judge-service serve` (or `python -m judge_service serve`), `judge-service prepare-model`,
and the judge-quality tools `calibrate`, `agreement`, `judge-file` and `regrade`
(judge_service/tools/cli.py)."""

from __future__ import annotations

import argparse
import gc
import logging
import math
import sys

from judge_service.config import Settings
from judge_service.tools import cli as tools_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="judge-service", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP service (settings from JUDGE_* variables)")
    serve.add_argument("--host", help="overrides JUDGE_HOST")
    serve.add_argument("--port", type=int, help="overrides JUDGE_PORT")
    commands.add_parser("prepare-model", help="prepare the embedded default model and print its folder")
    commands.add_parser(
        "migrate",
        help="apply the judgement database's pending migrations (JUDGE_DATABASE_URL); a deployment runs it "
        "once, before its replicas start",
    )
    tools_cli.add_commands(commands)
    args = parser.parse_args(argv)
    if args.command in tools_cli.COMMANDS:
        return tools_cli.run(args)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = Settings()
    if args.command == "prepare-model":
        from judge_service.default_model import prepared_model_dir

        print(prepared_model_dir(settings.home_dir))
        return 0
    if args.command == "migrate":
        return _migrate(settings)
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = settings.model_copy(update=overrides)
    if settings.workers > 1:
        return _serve_workers(settings)
    return _serve(settings)


def _migrate(settings: Settings) -> int:
    """Open the configured store with migrations on (each applied one is logged by name), then close."""
    import asyncio

    from judge_service.store.factory import build_store

    async def migrate() -> None:
        store = build_store(settings, migrate_on_open=True)
        await store.open()
        await store.close()

    try:
        asyncio.run(migrate())
    except Exception as exc:  # a database that cannot be reached or is newer than this build
        print(f"judge-service migrate: {exc}", file=sys.stderr)
        return 1
    print("judgement database is up to date")
    return 0


def _serve(settings: Settings) -> int:
    """Run the server until it stops; exit status 1 when it stopped because the judge backend failed."""
    import uvicorn

    from judge_service.app import create_app

    server: uvicorn.Server | None = None

    def stop() -> None:  # the in-process engine died (readiness.py): stop as on SIGTERM
        if server is not None:
            server.should_exit = True

    app = create_app(settings, on_fatal=stop)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="info",
        access_log=settings.access_log,
        # SIGTERM: stop accepting, let open requests finish (bounded), then the lifespan drains too.
        timeout_graceful_shutdown=max(1, math.ceil(settings.drain_timeout_s)),
    )
    server = uvicorn.Server(config)
    _tune_garbage_collector()
    server.run()
    failed = app.state.readiness.state == "failed" if hasattr(app.state, "readiness") else False
    return 1 if failed else 0


def _serve_workers(settings: Settings) -> int:
    """JUDGE_WORKERS processes on one port (uvicorn's supervisor), metrics added up over all of them.

    Each worker builds the app from the environment (create_app_from_environment), so the command-line
    overrides travel as JUDGE_* variables; the metrics directory is made empty first (values of an
    earlier run must not be added in)."""
    import os
    import shutil
    import tempfile

    import uvicorn

    metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or tempfile.mkdtemp(prefix="judge-metrics-")
    shutil.rmtree(metrics_dir, ignore_errors=True)
    os.makedirs(metrics_dir)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    os.environ["JUDGE_HOST"], os.environ["JUDGE_PORT"] = settings.host, str(settings.port)
    uvicorn.run(
        "judge_service.app:create_app_from_environment",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level="info",
        access_log=settings.access_log,
        timeout_graceful_shutdown=max(1, math.ceil(settings.drain_timeout_s)),
    )
    return 0


def _tune_garbage_collector() -> None:
    """Fewer and cheaper collections. A group allocates thousands of short-lived objects, so at the
    default threshold (700) the collector ran several times per group; freezing takes what lives as
    long as the process (modules, the app) out of every later scan. About 15% less server CPU per
    group in benchmarks/fake_capacity.py; reference cycles are rare here, so memory is unaffected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


if __name__ == "__main__":
    sys.exit(main())
