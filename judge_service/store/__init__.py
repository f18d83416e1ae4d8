"""Where judgements live: the store protocol (base.py); what both stores share: the stored form of a
judgement (stored_form/), the codec (rows, page items, cursors), the SQL of the run views and of member
groups (run_views.py, member_groups.py), group commit and named migrations; the SQLite and PostgreSQL
stores; the factory on JUDGE_DATABASE_URL (factory.py) and its URL rules (urls.py, standard library only,
read by config/). Imports schemas and errors; imported by the service, assembly/, cli.py and app.py."""
