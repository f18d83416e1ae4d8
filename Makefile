# The two commands a fresh machine needs: `make serve` and `make test`. Both install first: `make serve`
# only what serving needs (the runtime, the engine, the embedded model), `make test` also the test tools,
# the trainer packages and the Debian tools the tests drive. Each install runs again only when its inputs
# change.
VENV ?= .venv
PY := $(VENV)/bin/python
SERVE_STAMP := $(VENV)/.installed-serve
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: install install-dev serve test test-unit test-engine lint

$(SERVE_STAMP): pyproject.toml scripts/install.sh
	bash scripts/install.sh $(VENV)
	touch $(SERVE_STAMP)

$(DEV_STAMP): pyproject.toml scripts/install.sh
	bash scripts/install.sh $(VENV) --dev
	touch $(SERVE_STAMP) $(DEV_STAMP)

install: $(SERVE_STAMP)

install-dev: $(DEV_STAMP)

serve: install
	$(PY) -m judge_service serve

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/judge-service docs --check

# Both tiers: fast unit/API/backend tests (random order, pytest-randomly), then the engine tier on the
# real vLLM engine (fixed order: its tests share one engine).
test: lint
	$(PY) -m pytest -m "not engine" -q
	$(PY) -m pytest -m engine -q -p no:randomly

test-unit: install-dev
	$(PY) -m pytest -m "not engine" -q

test-engine: install-dev
	$(PY) -m pytest -m engine -q -p no:randomly
