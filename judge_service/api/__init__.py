"""HTTP: thin routes per family (routes.py: judging and judgements; quality.py; health.py; compat/: trainer
protocols), the typed dependencies they share (deps.py), middleware (middleware/) and the one error mapper
(errors.py). Imports assembly/, the service, quality/, schemas and errors; imported by ui/ and app.py."""
