"""Running the service as a server: one draining uvicorn process (draining.py), or several workers on one
socket under a supervisor (workers.py). Imports app and config; imported by cli.py only."""
