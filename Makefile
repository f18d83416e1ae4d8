# The two commands a fresh machine needs: `make serve` and `make test`. Both install first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install serve test test-unit test-engine lint bench-rules

$(STAMP): pyproject.toml scripts/install.sh
	bash scripts/install.sh $(VENV)
	touch $(STAMP)

install: $(STAMP)

serve: install
	$(PY) -m judge_service serve

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

# Both tiers: fast unit/API/backend tests (random order, pytest-randomly), then the engine tier on the
# real vLLM engine (fixed order: its tests share one engine).
test: lint
	$(PY) -m pytest -m "not engine" -q
	$(PY) -m pytest -m engine -q -p no:randomly

test-unit: install
	$(PY) -m pytest -m "not engine" -q

test-engine: install
	$(PY) -m pytest -m engine -q -p no:randomly
