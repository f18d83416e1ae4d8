"""Paths that more than one part of the HTTP layer names: the probes and the metrics, which health.py
serves, the drain gate always lets through and authentication may leave open."""

LIVENESS = "/healthz"
READINESS = "/readyz"
METRICS = "/metrics"
PROBES = frozenset({LIVENESS, READINESS})
