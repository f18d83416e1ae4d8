"""ASGI middleware around every route, outermost first as app.py adds them: request metrics
(request_metrics.py), the Host check and API-key authentication with page sessions (hosts.py, auth.py,
session.py), the body reader with its size cap and deadline (limits.py), and the drain gate and in-flight
cap (drain.py)."""
