"""Command line: `judge-service serve` (or `python -m judge_service serve`), `judge-service prepare-model`,
`judge-service migrate`, `judge-service docs` (the reference pages written from the code, docs.py), and the
judge-quality tools `calibrate`, `agreement`, `judge-file` and `regrade` (judge_service/tools/cli.py)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from pydantic import ValidationError

from judge_service.config import Settings
from judge_service.redaction import describe_invalid, protect_logs, redact
from judge_service.tools import cli as tools_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="judge-service", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP service (settings from JUDGE_* variables)")
    serve.add_argument("--host", help="overrides JUDGE_HOST")
    serve.add_argument("--port", type=int, help="overrides JUDGE_PORT")
    serve.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)  # a worker (server/workers.py)
    commands.add_parser("prepare-model", help="prepare the embedded default model and print its folder")
    commands.add_parser(
        "migrate",
        help="apply the judgement database's pending migrations (JUDGE_DATABASE_URL); a deployment runs it "
        "once, before its replicas start",
    )
    docs = commands.add_parser(
        "docs", help="write docs/reference/ (configuration, metrics, HTTP API) from the code"
    )
    docs.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale page")
    docs.add_argument("--out", type=Path, help="the folder of the reference pages (docs/reference)")
    tools_cli.add_commands(commands)
    args = parser.parse_args(argv)
    if args.command in tools_cli.COMMANDS:
        return tools_cli.run(args)
    if args.command == "docs":
        return _docs(args.out, check=args.check)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    protect_logs()
    try:
        settings = Settings()
    except ValidationError as exc:  # pydantic's own text would quote each value, a URL's password included
        print(f"judge-service: invalid settings: {describe_invalid(exc, _variable)}", file=sys.stderr)
        return 2
    if args.command == "prepare-model":
        from judge_service.backends.default_model import prepared_model_dir

        print(prepared_model_dir(settings.home_dir))
        return 0
    if args.command == "migrate":
        return _migrate(settings)
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = settings.model_copy(update=overrides)
    from judge_service.server.draining import serve as serve_one
    from judge_service.server.workers import serve_workers

    if args.listen_fd is None and settings.workers > 1:
        return serve_workers(settings)
    return serve_one(settings, listen_fd=args.listen_fd)


def _variable(field: str) -> str:
    """The JUDGE_* variable of a settings field (a dotted location keeps its tail)."""
    head, dot, tail = field.partition(".")
    return f"JUDGE_{head.upper()}{dot}{tail}"


def _docs(out: Path | None, *, check: bool) -> int:
    """Write the reference pages, or (--check) name each one that differs from what the code writes."""
    from judge_service import docs

    folder = out or docs.REFERENCE
    if not check:
        for path in docs.write(folder):
            print(f"wrote {path}")
        return 0
    stale = docs.check(folder)
    for path in stale:
        print(
            f"judge-service docs: {path} differs from what the code writes; run `judge-service docs`",
            file=sys.stderr,
        )
    return 1 if stale else 0


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
        print(f"judge-service migrate: {redact(str(exc))}", file=sys.stderr)
        return 1
    print("judgement database is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
