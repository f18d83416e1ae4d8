"""Judge backends behind one protocol (base.py): the in-process vLLM engine (vllm_engine.py, its stats in
engine_stats.py), an OpenAI-compatible HTTP endpoint (openai_http.py), and a scripted fake (fake.py); the
factory on JUDGE_BACKEND; whether the judge can judge (readiness.py); the embedded default model
(default_model.py). Imports config, metrics, errors and the client's Retry-After parser; imported by
judging/llm, api/health.py, cli.py and app.py."""
