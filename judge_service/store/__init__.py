"""Where judgements live: the store protocol (base.py), what every backend shares (codec.py: documents,
page items, cursors; migrations.py: named migrations), the SQLite store, and the factory on
JUDGE_DATABASE_URL. Imports schemas and errors; imported by the service, idempotency.py and app.py."""
