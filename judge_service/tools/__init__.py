"""Offline commands of `judge-service` (calibrate, agreement, judge-file, regrade), all through the typed
client. Imports client/, quality/ and schemas; imported only by cli.py. Nothing on the request path
imports it."""
