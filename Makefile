# The two commands a newcomer runs: `make up` (the Console on the embedded default) and `make test`.
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NODE_DIR := tests/differential/.node

.PHONY: up test bench bench-menu bench-runtime install node clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

install: $(STAMP)

# xstate for the differential test and the benchmark, installed into a folder the tests own.
$(NODE_DIR)/node_modules/xstate/package.json: tests/differential/package.json
	mkdir -p $(NODE_DIR)
	cp tests/differential/package.json $(NODE_DIR)/package.json
	cd $(NODE_DIR) && npm install --no-audit --no-fund --silent
	touch $@

node: $(NODE_DIR)/node_modules/xstate/package.json

up: install
	$(BIN)/jr2 up 127.0.0.1:8000

test: install node
	$(BIN)/mypy
	$(BIN)/python -m pytest

bench: install node
	$(BIN)/python -m bench.statechart
	$(BIN)/python -m bench.menu
	$(BIN)/python -m bench.runtime

# Allowed picks and scripted Session runs against their targets (docs/benchmarks.md, "Menu and Session").
bench-menu: install
	$(BIN)/python -m bench.menu

# The host on a SQLite file: overhead per pick, 1,000 runs at their Gates, resuming a 10,000-entry journal
# (docs/benchmarks.md, "Runtime").
bench-runtime: install
	$(BIN)/python -m bench.runtime

clean:
	rm -rf $(VENV) $(NODE_DIR) db.sqlite3
