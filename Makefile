# Development tasks. Every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install lint format typecheck test test-fast check demo demo-reset console screenshots bench bench-setup bench-server bench-production bench-outages bench-sandbox bench-request-cost bench-load bench-console bench-lighthouse bench-bounds bench-replay bench-long-thread clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "agentctl needs Python 3.11 or newer")'
	@echo "== Creating $(VENV) (the first time only, or after pyproject.toml changes)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@echo "== Installing agentctl and its Python packages into $(VENV) (2 to 3 minutes the first time)"
	$(BIN)/pip install --progress-bar on -e '.[dev]'
	@touch $(STAMP)
	@echo "== Installed: $(BIN)/agentctl"

lint: install
	$(BIN)/ruff check src tests scripts bench
	$(BIN)/ruff format --check src tests scripts bench

format: install
	$(BIN)/ruff format src tests scripts bench
	$(BIN)/ruff check --fix src tests scripts bench

typecheck: install
	$(BIN)/mypy

# Installs the Debian packages the tests need when they are missing (scripts/test-deps.sh),
# then runs the tests in TEST_WORKERS processes (pytest-xdist; a module's tests stay in one
# process, with its fixtures): most tests wait on servers; more processes than the two cores
# of CI make timing-sensitive tests (browser clicks, stalled replicas) miss.
TEST_WORKERS ?= 2
test: install
	BIN=$(BIN) bash scripts/test-deps.sh
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadscope --durations=20

# The tests that need nothing beyond Python (no PostgreSQL, Redis, bubblewrap, Node,
# Chromium or a tmpfs to fill) and take well under a second each: the markers are in pyproject.toml.
test-fast: install
	$(BIN)/pytest -q -m "not (postgres or redis or sandbox or node or browser or disk or slow)"

check: lint typecheck test

# Serve ./demo (scaffolded on the first run, then kept with your edits, threads and memory)
# with `agentctl dev` on the scripted model and a local identity provider (no key, no
# network); a sample request is answered, then it serves until Ctrl-C (DEMO_ONCE=1: stops).
# `exec`: the script is make's child, so the SIGTERM make passes on reaches it and its servers.
demo: install
	BIN=$(BIN) exec bash scripts/demo.sh

# The same, after deleting ./demo (its files, threads and memory) to scaffold it anew.
demo-reset: install
	BIN=$(BIN) DEMO_RESET=1 exec bash scripts/demo.sh

# The web console (console/, served at /ui/): rebuild it into src/agentctl/server/console/
# after changing its sources, and commit both (a test checks they agree). Needs Node 20+.
console:
	cd console && npm ci --no-audit --no-fund --loglevel=error && node build.mjs

# The console's browser tests, then the screenshots docs/console.md shows copied into docs/images/.
screenshots: install
	BIN=$(BIN) bash scripts/test-deps.sh
	AGENTCTL_SCREENSHOTS=build/screenshots $(BIN)/pytest -q tests/console
	mkdir -p docs/images
	for image in $$(grep -o 'images/console-[a-z0-9-]*\.png' docs/console.md | sort -u); do \
		cp build/screenshots/$${image#images/} docs/$$image; done

# The in-process floor. `make bench-server` measures the server against it and `langgraph dev`.
bench: install
	$(BIN)/python bench/runtime_floor.py
	$(BIN)/python bench/runtime_floor.py --checkpointer sqlite

# The `bench` extra: langgraph-cli[inmem] (langgraph dev), in the same venv.
bench-setup: $(VENV)/.installed-bench

$(VENV)/.installed-bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	@touch $@

# One long conversation (150 turns; ARGS="--turns 500", ARGS="--baseline main" for before/after)
# on `agentctl dev` and `langgraph dev`: first- and last-turn latency, bytes stored per turn.
bench-long-thread: bench-setup
	$(BIN)/python bench/long_thread.py $(ARGS)

# The server and `langgraph dev` side by side with the floor; ARGS="--runs 200" to shorten.
bench-server: bench-setup
	$(BIN)/python bench/server_vs_langgraph_dev.py $(ARGS)

# `agentctl serve` replicas on PostgreSQL + Redis: throughput with 1 and 2 replicas, latency,
# deploy-to-live with one agent and with ten on the platform (`ARGS="--agents N"`);
# uses DATABASE_URL / REDIS_URL or throwaway servers.
bench-production: install
	$(BIN)/python bench/production.py $(ARGS)

# Many users whose runs mostly wait for the model: agentctl dev, serve (1 and 2 replicas) and
# langgraph dev; ARGS="--users 32 --seconds 10 --server-env AGENTCTL_WORKERS=256" for example.
bench-load: bench-setup
	$(BIN)/python bench/load.py $(ARGS)

# The web console in Chromium on loopback: first paint, ready, chat latency (bench/console.py).
bench-console: install
	BIN=$(BIN) bash scripts/test-deps.sh
	$(BIN)/python bench/console.py $(ARGS)

# Lighthouse (npm, pinned in bench/lighthouse/) on the console's chat and thread views, in the
# system Chromium: accessibility, best practices and performance, mobile and desktop presets.
bench-lighthouse: install
	BIN=$(BIN) bash scripts/test-deps.sh
	$(BIN)/python bench/lighthouse.py $(ARGS)

# PostgreSQL and Redis stopped and started again under streamed runs on two replicas.
bench-outages: install
	$(BIN)/python bench/outages.py $(ARGS)

# What one sandboxed command costs, in process and through agentctl sandbox-server.
bench-sandbox: install
	$(BIN)/python bench/sandbox.py $(ARGS)

# Peak RSS and /ok stall during huge runs/wait inputs and a values-filtered thread search.
bench-request-cost: install
	$(BIN)/python bench/request_cost.py $(ARGS)

# Oversized WebSocket handshakes against a dev server's slots, and a dry run of a project
# holding a sparse 1 GiB file (bench/bounds.py).
bench-bounds: install
	$(BIN)/python bench/bounds.py $(ARGS)

# Replays and new runs on a thread of 1,000 runs against one of 10, on agentctl dev and serve.
bench-replay: install
	$(BIN)/python bench/replay.py $(ARGS)

clean:
	rm -rf $(VENV) demo .mypy_cache .ruff_cache .pytest_cache
