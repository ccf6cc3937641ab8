# memoryviz: `make run` sets everything up and serves the dashboard; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# The 2026 frameworks' libraries, which the exactness tests run as a reference: they cannot live beside the pins.
REF_VENV := .venv-ref-2026
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint setup native native-optional test-setup otel-clients memory-libs browser-deps migrate demo bench system-deps clean

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --disable-pip-version-check -q -r requirements.txt
	touch $@

$(VENV)/.test: $(VENV)/.runtime requirements-test.txt
	$(PIP) install --disable-pip-version-check -q -r requirements-test.txt
	touch $@

$(REF_VENV)/.installed: requirements-ref-2026.txt
	test -x $(REF_VENV)/bin/python || $(PYTHON) -m venv $(REF_VENV)
	$(REF_VENV)/bin/python -m pip install --disable-pip-version-check -q -r requirements-ref-2026.txt
	touch $@

# The native decoder of OTLP trace bodies (agents/memory/_otlp_wire.c), built with this Python's compiler and flags
# when its source changed. Without a C compiler `make run` goes on and reads bodies with the protobuf library alone
# (the same spans, slower); `make test` needs it (the tests compare the two): `sudo make system-deps` installs gcc.
native-optional: $(VENV)/.runtime
	@$(PY) -m agents.memory.native_build --optional

native: $(VENV)/.runtime
	@$(PY) -m agents.memory.native_build

setup: $(VENV)/.runtime native-optional

migrate: setup
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py seed_demo

# The server and one background worker (big reports, exports, imports) together; Ctrl-C stops both.
run: demo
	$(PY) manage.py cleanup_imports >/dev/null
	@echo "memoryviz: http://$(HOST):$(PORT)/  (log in as demo / memoryviz-demo); a background worker runs beside it"
	@$(PY) manage.py run_worker --no-reload & worker=$$!; \
	  trap 'kill $$worker 2>/dev/null; wait $$worker 2>/dev/null' EXIT INT TERM; \
	  $(PY) manage.py runserver $(HOST):$(PORT)

# The OpenTelemetry instrumentation packages conflict with our pins: each set gets a virtualenv of its own, in
# which tests/test_otel_clients.py runs real instrumented agents as subprocesses.
OTEL_VENV := .venv-otel
OTEL_LEGACY_VENV := .venv-otel-legacy

$(OTEL_VENV)/.installed: tests/otel_clients/requirements-current.txt
	rm -rf $(OTEL_VENV) && $(PYTHON) -m venv $(OTEL_VENV)
	$(OTEL_VENV)/bin/pip install --disable-pip-version-check -q -r $<
	touch $@

$(OTEL_LEGACY_VENV)/.installed: tests/otel_clients/requirements-legacy.txt
	rm -rf $(OTEL_LEGACY_VENV) && $(PYTHON) -m venv $(OTEL_LEGACY_VENV)
	$(OTEL_LEGACY_VENV)/bin/pip install --disable-pip-version-check -q -r $<
	touch $@

# The memory and retrieval span emitters (issue 26), each in its own: openinference-instrumentation-langchain around
# LangChain retrievers, latitude-telemetry's memory telemetry (it pins the SDK 1.44), openlit instrumenting mem0.
OTEL_RETRIEVER_VENV := .venv-otel-retriever
OTEL_LATITUDE_VENV := .venv-otel-latitude
OTEL_OPENLIT_VENV := .venv-otel-openlit

$(OTEL_RETRIEVER_VENV)/.installed: tests/otel_clients/requirements-retriever.txt
	rm -rf $(OTEL_RETRIEVER_VENV) && $(PYTHON) -m venv $(OTEL_RETRIEVER_VENV)
	$(OTEL_RETRIEVER_VENV)/bin/pip install --disable-pip-version-check -q -r $<
	touch $@

$(OTEL_LATITUDE_VENV)/.installed: tests/otel_clients/requirements-latitude.txt
	rm -rf $(OTEL_LATITUDE_VENV) && $(PYTHON) -m venv $(OTEL_LATITUDE_VENV)
	$(OTEL_LATITUDE_VENV)/bin/pip install --disable-pip-version-check -q -r $<
	touch $@

$(OTEL_OPENLIT_VENV)/.installed: tests/otel_clients/requirements-openlit.txt
	rm -rf $(OTEL_OPENLIT_VENV) && $(PYTHON) -m venv $(OTEL_OPENLIT_VENV)
	$(OTEL_OPENLIT_VENV)/bin/pip install --disable-pip-version-check -q -r $<
	touch $@

otel-clients: $(OTEL_VENV)/.installed $(OTEL_LEGACY_VENV)/.installed $(OTEL_RETRIEVER_VENV)/.installed \
	$(OTEL_LATITUDE_VENV)/.installed $(OTEL_OPENLIT_VENV)/.installed

# The memory libraries whose own files the memory readers are tested on (tests/memory_libs/runner.py writes them in
# the test setup): LangGraph, the Agents SDK, AutoGen AgentChat and mem0 2.x share one; AgentScope 1.0.21 needs
# mem0 1.x and mcp 1.30 and gets its own; AgentScope 2.0.11 (a rewrite, mcp 2.x) another.
MEM_VENV := .venv-mem
MEM_AGENTSCOPE_VENV := .venv-mem-agentscope
MEM_AGENTSCOPE2_VENV := .venv-mem-agentscope2

$(MEM_VENV)/.installed: tests/memory_libs/requirements-mem.txt
	rm -rf $(MEM_VENV) && $(PYTHON) -m venv $(MEM_VENV)
	$(MEM_VENV)/bin/pip install --disable-pip-version-check -q -r $<
	touch $@

$(MEM_AGENTSCOPE_VENV)/.installed: tests/memory_libs/requirements-agentscope.txt
	rm -rf $(MEM_AGENTSCOPE_VENV) && $(PYTHON) -m venv $(MEM_AGENTSCOPE_VENV)
	$(MEM_AGENTSCOPE_VENV)/bin/pip install --disable-pip-version-check -q -r $<
	touch $@

$(MEM_AGENTSCOPE2_VENV)/.installed: tests/memory_libs/requirements-agentscope2.txt
	rm -rf $(MEM_AGENTSCOPE2_VENV) && $(PYTHON) -m venv $(MEM_AGENTSCOPE2_VENV)
	$(MEM_AGENTSCOPE2_VENV)/bin/pip install --disable-pip-version-check -q -r $<
	touch $@

memory-libs: $(MEM_VENV)/.installed $(MEM_AGENTSCOPE_VENV)/.installed $(MEM_AGENTSCOPE2_VENV)/.installed

test-setup: $(VENV)/.test native otel-clients memory-libs $(REF_VENV)/.installed

# Browser tests need Debian's chromium, the native decoder gcc: installed here when missing and running as root,
# otherwise `sudo make system-deps` once.
browser-deps:
	@{ command -v chromium && command -v gcc; } >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && bash .ci/system-deps; } || \
	  { echo "Chromium or gcc is missing: run 'sudo make system-deps' once (Debian's chromium, gcc, PostgreSQL)."; \
	    exit 1; }

# Lint (ruff) and type checks (mypy), configured in pyproject.toml: a finding fails `make test` before any test runs.
lint: $(VENV)/.test
	$(VENV)/bin/ruff check
	$(PY) -m mypy

# The ten virtualenvs install seven at a time (-j7): their downloads, not the CPU, are what takes the time. The tests
# run in one process per core (pytest-xdist; each has its own test database); TEST_WORKERS=0 runs them in one.
TEST_WORKERS ?= auto
test: browser-deps
	@$(MAKE) --no-print-directory -j7 test-setup
	@$(MAKE) --no-print-directory lint
	$(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

system-deps:
	bash .ci/system-deps

# Every benchmark with its default settings (bench/README.md has each one's command and figures of record); several
# minutes, best run on a quiet machine.
bench: test-setup
	@for script in $(sort $(wildcard bench/bench_*.py)); do echo "=== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) $(OTEL_VENV) $(OTEL_LEGACY_VENV) $(OTEL_RETRIEVER_VENV) $(OTEL_LATITUDE_VENV) $(OTEL_OPENLIT_VENV) $(REF_VENV) $(MEM_VENV) $(MEM_AGENTSCOPE_VENV) staticfiles .pytest_cache .hypothesis .mypy_cache .ruff_cache
