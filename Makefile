# News article delivery service. `make serve` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLE_SRC := data/sample
BUNDLE_DIR := data/bundles
# gunicorn (default: Falcon on gunicorn, docs/architecture.md) or granian (see docs/benchmarks.md).
SERVER ?= gunicorn
HOST ?= 127.0.0.1
PORT ?= 8000
# One Python thread per granian worker: the app is CPU-bound, so more threads only fight
# over the GIL (measured: mix throughput +90%, p99 halved; docs/benchmarks.md). Backpressure
# bounds the requests a worker accepts at once. Crashed workers are replaced. One file holds
# them for make serve, the tests and the benchmarks alike.
GRANIAN_OPTS := $(shell cat deploy/granian/options)

.PHONY: install serve-deps serve test test-fast lint format bundles build-sharded bench bench-publish bench-layouts \
	bench-features bench-delivery \
	fuzz soak lock clean cluster cluster-stop cluster-publish

# Two environments in one .venv, each installed only where it is used:
# - the server's (`make serve`, `make bundles`): the runtime lock alone (requirements.txt) and
#   Swagger UI for /docs; the code runs from this directory (PYTHONPATH), as in the image;
# - the developer's (`make install`, `make test` and the rest): the dev lock on top (a
#   superset of the runtime lock), then the project itself, editable, so that `app` imports
#   from anywhere and the commands of [project.scripts] exist. No dependency is resolved at
#   install time: the hashed locks have them all.
$(BIN)/.runtime: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements.txt
	touch $@

$(BIN)/.installed: $(BIN)/.runtime requirements-dev.txt pyproject.toml
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# From npm, pinned with integrity hashes in package-lock.json; install scripts are not run
# (neither package needs one). swagger-ui-dist is served at /docs, so the server needs it
# (`npm ci --omit=dev`); Redocly CLI lints /openapi.json in make test (a full `npm ci`).
SWAGGER_UI := node_modules/swagger-ui-dist/package.json
NPM_CI := npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

$(SWAGGER_UI): package.json package-lock.json
	$(NPM_CI) --omit=dev
	touch $@

node_modules/.dev-tools: package.json package-lock.json
	$(NPM_CI)
	touch $@ $(SWAGGER_UI)

install: $(BIN)/.installed node_modules/.dev-tools

# The server's environment only.
serve-deps: $(BIN)/.runtime $(SWAGGER_UI)

# Rebuilt when the sample or the builder changes; the builder swaps it in atomically.
$(BUNDLE_DIR)/manifest.json: $(BIN)/.runtime $(wildcard $(SAMPLE_SRC)/*.jsonl) \
		$(wildcard app/builder/*.py app/bundle/*.py app/search/*.py) app/compression.py
	PYTHONPATH=$(CURDIR) $(BIN)/python scripts/build_bundles.py --src $(SAMPLE_SRC) --out $(BUNDLE_DIR)

bundles: $(BUNDLE_DIR)/manifest.json

# A from-scratch build as many machines run it (docs/publishing.md, "Building on many
# machines"), rehearsed here: the plan, SHARDS shard processes at once (SHARD_JOBS worker
# processes each), then the merge into OUT. WORK holds the plan and the shards' outputs; the
# bundle is byte for byte the one `build_bundles.py --full` makes.
SHARDS ?= 4
SHARD_JOBS ?= 1
WORK ?= $(patsubst %/,%,$(OUT)).work
BUILD := $(BIN)/python scripts/build_bundles.py
build-sharded: install
	@test -n "$(SRC)" -a -n "$(OUT)" || { \
		echo "usage: make build-sharded SRC=DIR OUT=DIR [SHARDS=4] [SHARD_JOBS=1] [WORK=DIR]" >&2; exit 2; }
	$(BUILD) --step plan --src $(SRC) --work $(WORK)
	@pids=""; for k in $$(seq 0 $$(($(SHARDS) - 1))); do \
		$(BUILD) --step shard --src $(SRC) --work $(WORK) --shard $$k --shards $(SHARDS) \
			--jobs $(SHARD_JOBS) & pids="$$pids $$!"; \
	done; status=0; for pid in $$pids; do wait $$pid || status=1; done; exit $$status
	$(BUILD) --step merge --work $(WORK) --shards $(SHARDS) --out $(OUT)

serve: serve-deps bundles
ifeq ($(SERVER),granian)
	PYTHONPATH=$(CURDIR) NEWS_BUNDLE_DIR=$(BUNDLE_DIR) $(BIN)/granian $(GRANIAN_OPTS) --host $(HOST) --port $(PORT) \
		--workers $${WEB_CONCURRENCY:-2} app.wsgi:app
else
	PYTHONPATH=$(CURDIR) NEWS_BUNDLE_DIR=$(BUNDLE_DIR) NEWS_BIND=$(HOST):$(PORT) \
		$(BIN)/gunicorn -c app/gunicorn_conf.py app.wsgi:app
endif

# -- Production topology on this machine (docs/operations.md) ------------------------------
# The edge (Varnish, 127.0.0.1:8088; cluster/edge.py) in front of nginx on 127.0.0.1:8080 in
# front of INSTANCES gunicorn instances sharing PostgreSQL at 127.0.0.1:5432; runtime state,
# logs and bundles under .cluster/ (cluster/runtime.py).
INSTANCES ?= 3
CLUSTER := $(BIN)/python -m cluster

cluster: install
	$(CLUSTER) start --instances $(INSTANCES) --src $(SAMPLE_SRC)

cluster-stop: install
	$(CLUSTER) stop

# Build SRC once, roll it out one instance at a time, then purge the edge's changed keys.
cluster-publish: install
	@test -n "$(SRC)" || { echo "usage: make cluster-publish SRC=DIR" >&2; exit 2; }
	$(CLUSTER) publish --src $(SRC)
# -------------------------------------------------------------------------------------------

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy app/

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint
	$(BIN)/pytest

# Unit and HTTP tests only: no server processes.
test-fast: install
	$(BIN)/pytest -m "not e2e"

# Load benchmark (needs wrk and nginx from Debian; bench-only tools from bench/requirements.txt),
# then the publishing figures (bench-publish) and the layout comparison (bench-layouts).
bench: install
	$(BIN)/pip install --quiet --require-hashes -r bench/requirements.txt
	$(BIN)/python bench/run.py
	$(MAKE) bench-publish bench-layouts bench-features bench-delivery

# Publishing at archive scale (docs/publishing.md): 9 x PUBLISH_SIZES articles, generated on the
# first run under bench/.cache (about 6 GB at 100,000). Writes its docs/benchmarks.md sections.
PUBLISH_SIZES ?= 10000 100000
bench-publish: install
	for n in $(PUBLISH_SIZES); do \
		$(BIN)/python bench/publish.py --per-language $$n --work bench/.cache/publish \
			--json bench/results/publish-$$n.json --docs || exit 1; \
	done

# Serving cost of the segmented layout against the previous one, and after 50 publishes.
bench-layouts: install
	$(BIN)/python bench/layouts.py --json bench/results/layouts.json --docs

# Query features (docs/api.md §7) against plain requests and the code before them.
bench-features: install
	$(BIN)/python bench/features.py --json bench/results/features.json --docs

# Compressed delivery against identity, with nginx gzip_static as the anchor (docs/delivery.md).
bench-delivery: install
	$(BIN)/pip install --quiet --require-hashes -r bench/requirements.txt
	$(BIN)/python bench/delivery.py --json bench/results/delivery.json --docs

# Long contract fuzz (schemathesis, 10 minutes; NEWS_FUZZ_SEED=N reproduces a run) and a
# 5-minute soak against real gunicorn (NEWS_TEST_WORKER_CLASS=gthread for the other worker);
# results go to docs/reliability.md by hand. make test runs short versions of both.
fuzz: install
	NEWS_FUZZ=long $(BIN)/pytest -s -p no:cacheprovider tests/reliability/test_fuzz.py

soak: install
	NEWS_LOAD_SECONDS=300 $(BIN)/pytest -s -p no:cacheprovider tests/reliability/test_load.py

# Regenerate the hashed lock files from pyproject.toml (needs network access to PyPI).
lock: install
	$(BIN)/pip install --quiet pip-tools==7.6.2
	$(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url -o requirements.txt pyproject.toml
	$(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --extra dev \
		-o requirements-dev.txt pyproject.toml
	$(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --extra dev \
		--extra bench -o bench/requirements.txt pyproject.toml

clean:
	rm -rf $(VENV) $(BUNDLE_DIR) .pytest_cache .ruff_cache .hypothesis node_modules
