"""Judge backends behind one protocol (base.py): the in-process vLLM engine, an OpenAI-compatible HTTP
endpoint, and a scripted fake. Imports config, metrics and errors; imported by judging/llm, readiness.py
and app.py (through factory.py)."""
