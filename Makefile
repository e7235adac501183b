# News article delivery service. `make serve` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLE_SRC := data/sample
BUNDLE_DIR := data/bundles
# gunicorn (default, the design card's server) or granian (see docs/benchmarks.md).
SERVER ?= gunicorn
HOST ?= 127.0.0.1
PORT ?= 8000
# One Python thread per granian worker: the app is CPU-bound, so more threads only fight
# over the GIL (measured: mix throughput +90%, p99 halved; docs/benchmarks.md). Backpressure
# bounds the requests a worker accepts at once. Crashed workers are replaced.
GRANIAN_OPTS := --interface wsgi --blocking-threads 1 --backpressure 32 --respawn-failed-workers

.PHONY: install serve test test-fast lint format bundles bench fuzz soak lock clean

$(BIN)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.txt
	touch $@

install: $(BIN)/.installed

# Rebuilt when the sample or the builder changes; the builder swaps it in atomically.
$(BUNDLE_DIR)/manifest.json: $(BIN)/.installed $(wildcard $(SAMPLE_SRC)/*.jsonl) \
		$(wildcard app/build/*.py app/bundle/*.py app/search/*.py)
	$(BIN)/python scripts/build_bundles.py --src $(SAMPLE_SRC) --out $(BUNDLE_DIR)

bundles: $(BUNDLE_DIR)/manifest.json

serve: bundles
ifeq ($(SERVER),granian)
	NEWS_BUNDLE_DIR=$(BUNDLE_DIR) $(BIN)/granian $(GRANIAN_OPTS) --host $(HOST) --port $(PORT) \
		--workers $${WEB_CONCURRENCY:-2} app.wsgi:app
else
	NEWS_BUNDLE_DIR=$(BUNDLE_DIR) NEWS_BIND=$(HOST):$(PORT) \
		$(BIN)/gunicorn -c app/gunicorn_conf.py app.wsgi:app
endif

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint
	$(BIN)/pytest

# Unit and HTTP tests only: no server processes.
test-fast: install
	$(BIN)/pytest -m "not e2e"

# Load benchmark (needs wrk and nginx from Debian; bench-only tools from bench/requirements.txt).
bench: install
	$(BIN)/pip install --quiet --require-hashes -r bench/requirements.txt
	$(BIN)/python bench/run.py

# Long contract fuzz (schemathesis, 10 minutes) and a 5-minute soak against real gunicorn;
# results go to docs/reliability.md by hand. make test runs short versions of both.
fuzz: install
	$(BIN)/python scripts/fuzz.py --long

soak: install
	$(BIN)/python scripts/soak.py --seconds 300

# Regenerate the hashed lock files from pyproject.toml (needs network access to PyPI).
lock: install
	$(BIN)/pip install --quiet pip-tools==7.6.2
	$(BIN)/pip-compile --quiet --generate-hashes --strip-extras --no-emit-index-url -o requirements.txt pyproject.toml
	$(BIN)/pip-compile --quiet --generate-hashes --strip-extras --no-emit-index-url --extra dev \
		-o requirements-dev.txt pyproject.toml
	$(BIN)/pip-compile --quiet --generate-hashes --strip-extras --no-emit-index-url --extra dev \
		--extra bench -o bench/requirements.txt pyproject.toml

clean:
	rm -rf $(VENV) $(BUNDLE_DIR) .pytest_cache .ruff_cache .hypothesis
