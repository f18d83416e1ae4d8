"""HTTP: thin routes per family (judging and judgements, quality, health), auth, body limits, drain, request
metrics and the one error mapper. Imports the service, schemas, readiness and errors; imported by app.py
only."""
