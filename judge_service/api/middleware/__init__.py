"""ASGI middleware around every route, outermost first as app.py adds them: request metrics
(request_metrics.py), the drain gate and in-flight cap (drain.py), API-key authentication with page sessions
(auth.py, session.py), and the body-size limit (limits.py)."""
