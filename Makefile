# probetop developer entry points. `make demo` and `make test` are the two
# commands in README.md; CI (.ci/run) calls `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEV_STAMP := $(VENV)/.dev-installed-stamp
COMPILED := $(VENV)/.compiled-stamp

.PHONY: setup setup-dev demo test lint format system-deps bench bench-one clean

# `setup`: the program and what it needs to run, nothing more (`make demo`);
# `setup-dev`: also the test and lint tools (`make test`, `make lint`).
setup: $(STAMP) $(COMPILED)
setup-dev: $(DEV_STAMP)

PIP_EXTRAS ?=
# setuptools' editable build says "Editable installation ... Please be careful
# with folders in your working directory with the same name as your package"
# for any package-dir mapping (ours maps probetop.* to probes/, tui/, themes/:
# there is no probetop/ folder for it to mean). Information, not a warning
# about this project; filtered by its first words only.
EDITABLE := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet -e
# `make test` runs `probetop compile` itself, beside lint: the compile keeps one
# core busy for ~50 s on a clean clone, mypy the other (~20 CPU-s that would
# otherwise come out of the parallel test pass).
COMPILE_AT_INSTALL ?= 1
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(EDITABLE) '.$(PIP_EXTRAS)'
	@# What a fresh install's first run would otherwise do on screen: compile our
	@# bytecode (an editable install has none) and the native disk/ICMP loops
	@# into the per-user numba cache (15-25 s once; `probetop compile`).
	$(BIN)/python -m compileall -q probes tui themes >/dev/null
	@if [ "$(COMPILE_AT_INSTALL)" = 1 ]; then echo "$(BIN)/probetop compile"; $(BIN)/probetop compile && touch $(COMPILED); fi
	touch $(STAMP)

# The files the native loops are built from (probes/disk/workers.py and
# probes/icmp/loopstate.py: _SOURCES; tests/core/test_makefile_compile.py
# holds the lists equal). After an update that changes one (`git pull`),
# `make setup` and `make demo` run `probetop compile` again: the kept loops
# in the user's cache and the install's share/ are stale then, and without
# it the first IOPS, warm-up or ICMP run compiled them with numba on screen
# (20-55 s), and every later run imported numba (about 1 s of CPU) until a
# `probetop compile` by hand. The stamp alone once followed pyproject.toml.
NATIVE_SOURCES := probes/disk/native.py probes/disk/counters.py probes/disk/uring.py \
  probes/icmp/engine.py probes/icmp/layout.py
$(COMPILED): $(NATIVE_SOURCES) | $(STAMP)
	@if [ "$(COMPILE_AT_INSTALL)" = 1 ]; then echo "$(BIN)/probetop compile"; $(BIN)/probetop compile && touch $(COMPILED); fi

# A fresh venv gets the program and the test tools in one pip run (one
# resolve and editable build, not two: a minute on a loaded 2-core machine).
$(DEV_STAMP): pyproject.toml
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then \
	  echo "$(BIN)/pip install --quiet -e '.[dev]'"; $(EDITABLE) '.[dev]'; \
	else $(MAKE) --no-print-directory $(STAMP) PIP_EXTRAS='[dev]' COMPILE_AT_INSTALL=$(COMPILE_AT_INSTALL); fi
	touch $(DEV_STAMP)

demo: setup
	@echo "probetop is installed in $(VENV)/bin: '. $(VENV)/bin/activate' puts it on PATH (or run $(VENV)/bin/probetop)"
	$(BIN)/probetop demo

# Reference tools and real targets the tests compare against (root + apt only;
# tests that need a missing tool skip with the reason). Says what it will
# install before it does; NO_SYSTEM_DEPS=1 skips it.
SYSTEM_PACKAGES := sysbench fio iputils-ping hping3 nginx tmux curl iproute2 nftables \
  util-linux e2fsprogs openssh-client openssh-server prometheus wrk libfuse2
system-deps:
	@if [ -n "$(NO_SYSTEM_DEPS)" ]; then \
	  echo "NO_SYSTEM_DEPS set: not installing reference tools (tests needing a missing one skip)"; \
	else \
	  missing=""; PATH="$$PATH:/usr/sbin:/sbin"; \
	  for t in sysbench fio ping hping3 nginx tmux curl ip nft losetup mkfs.ext4 ssh /usr/sbin/sshd promtool wrk; do \
	    command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	  { ldconfig -p 2>/dev/null || /sbin/ldconfig -p; } | grep -q 'libfuse.so.2' || missing="$$missing libfuse2"; \
	  if [ -z "$$missing" ]; then echo "reference tools: all installed"; \
	  elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "missing reference tools:$$missing"; \
	    echo "installing with apt-get: $(SYSTEM_PACKAGES)"; \
	    echo "(nginx, openssh-server and prometheus are services: apt may start them;"; \
	    echo " tests run their own copies on loopback. NO_SYSTEM_DEPS=1 make test skips this.)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      $(SYSTEM_PACKAGES) >/dev/null || echo "apt-get failed: tests needing these tools will skip"; \
	  else \
	    echo "missing reference tools:$$missing"; \
	    echo "not installing them (needs root and apt-get): tests needing them skip, saying which."; \
	    echo "To install on Debian/Ubuntu: sudo apt-get install $(SYSTEM_PACKAGES)"; \
	  fi; \
	fi

LINT_STEPS := $(BIN)/ruff check . && $(BIN)/ruff format --check . && \
  $(BIN)/mypy probes tui themes && $(BIN)/lint-imports
lint: setup-dev
	$(LINT_STEPS)

format: setup-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Two passes: the parallel-safe tests on one worker per core (-n auto:
# tests/conftest.py, which says why not two yet), work-stealing so no
# worker idles while another holds a queue of slow tests, then the `serial`
# ones (rates and ratios against reference tools) alone; both run, either fails it. Beside `probetop
# compile` (single-threaded; ~2 s when nothing changed), on the other core:
# one collection that keeps pytest's assert-rewritten test modules in
# __pycache__ (PYTHONDONTWRITEBYTECODE, set in CI's environment, stops every
# pytest process from keeping them: each worker and the serial pass then
# rewrote all 176 modules again, ~9 CPU-s each), then lint, which goes on
# beside the parallel pass if it has not finished (its output follows that
# pass; a lint failure fails `test`).
TEST_JOBS ?= auto
# WAIT_JOBS=N (N > 0): the modules in tests/conftest.py WAIT_BOUND (tests
# that sleep on a product deadline, an sshd link, curl's retry delays; under
# 0.1 CPU-s per wall second, measured) run on N workers of their own beside
# the parallel pass, not in it. Off (0) by default until measured green three
# times in a row on a loaded machine; docs/testing.md has the figures.
WAIT_JOBS ?= 0
test: COMPILE_AT_INSTALL := 0
test: setup-dev system-deps
	@rc=0; lintlog=$$(mktemp); \
	{ env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest --collect-only -q -p no:cacheprovider \
	    >/dev/null 2>&1; $(LINT_STEPS); } >$$lintlog 2>&1 & lint=$$!; \
	echo "$(BIN)/probetop compile"; \
	if ! $(BIN)/probetop compile; then wait $$lint; cat $$lintlog; rm -f $$lintlog; exit 1; fi; \
	touch $(COMPILED); \
	main="not serial"; waits=""; \
	if [ "$(WAIT_JOBS)" != 0 ]; then main="not serial and not waits"; waitlog=$$(mktemp); \
	  $(BIN)/pytest -q -ra -n $(WAIT_JOBS) --dist worksteal --durations=5 -m "waits and not serial" \
	    >$$waitlog 2>&1 & waits=$$!; fi; \
	$(BIN)/pytest -q -ra -n $(TEST_JOBS) --dist worksteal --durations=15 -m "$$main" || rc=$$?; \
	if [ -n "$$waits" ]; then wait $$waits || rc=1; \
	  echo "== wait-bound tests (-m waits: $(WAIT_JOBS) worker(s) beside the parallel pass)"; \
	  cat $$waitlog; rm -f $$waitlog; fi; \
	wait $$lint || rc=1; echo "== lint (ruff, mypy, lint-imports)"; cat $$lintlog; rm -f $$lintlog; \
	$(BIN)/pytest -q -ra --durations=10 -m serial || rc=$$?; \
	exit $$rc

# Every benchmark in its quick mode (benchmarks/bench.py --list; each has a
# time limit, the run a 30 min budget); writes docs/figures.md, the one page
# of measured figures. A missed goal shows as "no" there, it does not fail
# the run. `make bench-one B=NAME` reruns one benchmark and merges it in.
bench: setup-dev system-deps
	$(BIN)/python benchmarks/bench.py

bench-one: setup-dev
	@test -n "$(B)" || { echo "usage: make bench-one B=NAME (names: $(BIN)/python benchmarks/bench.py --list)"; exit 2; }
	$(BIN)/python benchmarks/bench.py $(B)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
