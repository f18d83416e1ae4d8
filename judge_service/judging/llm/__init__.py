"""The LLM judge: one model call sees the whole group (judge.py, the grader), rendered from the prompt
templates (prompt.py), shown in seeded answer orders (orders.py), called with retries and parsed against
a per-request JSON schema (caller.py, parser.py). Imports judging.base, the backend protocol, admission,
metrics, schemas and errors."""
