# nodus console: two commands.
#   make run   - set up .venv, migrate, seed, collect static files, print the URL/login/kubeconfig
#                and serve (daphne)
#   make test  - install what the tests need, then ruff, mypy and every pytest test
# Both are non-interactive and idempotent: a second run installs nothing and starts at once.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
# Dependencies are installed from lock files with hashes, made from pyproject.toml by `make lock`:
# requirements/test.txt pins everything `make test` needs (runtime + the [test] extra) and
# requirements/run.txt the runtime subset, at the same versions.
RUN_LOCK := requirements/run.txt
TEST_LOCK := requirements/test.txt
# The dependency stamps carry a hash of their lock: a new lock reinstalls, anything else costs
# nothing.
RUN_STAMP := $(VENV)/.installed-run-$(shell sha256sum $(RUN_LOCK) 2>/dev/null | cut -c1-12)
TEST_STAMP := $(VENV)/.installed-test-$(shell sha256sum $(TEST_LOCK) 2>/dev/null | cut -c1-12)
# JavaScript from npm (package.json, locked with integrity hashes in package-lock.json): the
# console's code editor (CodeMirror, bundled from frontend/ by esbuild into build/, which is not
# committed) and what the browser tests inject (axe-core). `npm ci` installs exactly the lock,
# without install scripts.
NODE_STAMP := node_modules/.installed-$(shell sha256sum package-lock.json 2>/dev/null | cut -c1-12)
EDITOR_BUNDLE := build/static/console/editor.js
# Two cores on these machines; xdist's `auto` would count hyperthreads elsewhere.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
PIP := $(PY) -m pip install --disable-pip-version-check --no-input --quiet
# Some machines point pip at local wheel folders that may be absent; its warnings about them
# say nothing about the install.
PIP_QUIET := { grep -v "is ignored: it is neither a file nor a directory" || true; }
# After a --no-deps install: every installed package has what it needs (a package the lock no
# longer names can be left over in an old .venv; removing .venv starts clean).
PIP_CHECK := out=$$($(PY) -m pip check 2>&1) || { echo "$$out" >&2; \
	echo "pip check failed: the lock misses a dependency, or .venv holds leftovers (rm -rf $(VENV))" >&2; \
	exit 1; }

.PHONY: help run test lint typecheck pytest pytest-main pytest-postgres pytest-browser bench deps test-deps venv-check \
	system-test-deps lock clean editor screenshots bench-scale

help:
	@echo "make run    serve the console, API and controller at http://127.0.0.1:8000/"
	@echo "make test   linters, type checks and every test (installs what they need)"
	@echo "make bench  request latency over HTTP against a live daphne, beside baselines"
	@echo "make bench-scale  10,000 objects and 1,000 informers, nodus beside etcd"
	@echo "make lock   re-lock the dependencies after editing pyproject.toml (UPGRADE=pkg upgrades one)"

run: $(RUN_STAMP) editor
	$(PY) manage.py serve

# The code editor is built where npm is; elsewhere the manifest is a plain text area.
editor:
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory $(EDITOR_BUNDLE); \
	else echo "note: npm is missing: the publish editor is a plain text area (apt-get install npm)"; fi

$(EDITOR_BUNDLE): frontend/editor.js package.json $(NODE_STAMP)
	npm run --silent build

# Every step runs even when an earlier one fails, so one CI run shows every problem; the
# target fails at the end if any step did.
test: $(TEST_STAMP) system-test-deps $(NODE_STAMP) $(EDITOR_BUNDLE)
	@failed=""; \
	for step in lint typecheck pytest-main pytest-postgres pytest-browser; do \
		echo "== $$step"; started=$$(date +%s); \
		$(MAKE) --no-print-directory $$step || failed="$$failed $$step"; \
		echo "== $$step took $$(( $$(date +%s) - started ))s"; \
	done; \
	if [[ -n "$$failed" ]]; then echo "make test FAILED:$$failed" >&2; exit 1; fi; \
	echo "make test passed"

# A venv made with another interpreter (say 3.11, which would quietly get Django 5) is rebuilt.
$(VENV)/bin/python:
	@python=$$(bash .ci/find-python); \
	echo "creating $(VENV) with $$python"; \
	"$$python" -m venv --clear $(VENV)

venv-check: $(VENV)/bin/python
	@if ! $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
		python=$$(bash .ci/find-python); \
		echo "$(VENV) is not Python >= 3.12: recreating it with $$python"; \
		"$$python" -m venv --clear $(VENV); \
	fi

# Not a package (no `pip install -e .`): exactly what the lock pins, every file checked against
# its hashes; --no-deps because the lock already lists every dependency (PIP_CHECK makes sure).
$(RUN_STAMP): $(RUN_LOCK) | venv-check
	$(PIP) --require-hashes --no-deps -r $(RUN_LOCK) 2>&1 | $(PIP_QUIET)
	@$(PIP_CHECK)
	@rm -f $(VENV)/.installed-run-*; touch $@

$(TEST_STAMP): $(TEST_LOCK) $(RUN_STAMP)
	$(PIP) --require-hashes --no-deps -r $(TEST_LOCK) 2>&1 | $(PIP_QUIET)
	@$(PIP_CHECK)
	@rm -f $(VENV)/.installed-test-*; touch $@

$(NODE_STAMP): package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	@rm -f node_modules/.installed-*; touch $@

deps: $(RUN_STAMP)
test-deps: $(TEST_STAMP) system-test-deps $(NODE_STAMP) $(EDITOR_BUNDLE)

# Re-locks from pyproject.toml with uv (pinned here, kept in .venv, apart from the project's
# packages), for Python 3.12 on x86_64 Linux. Existing pins are kept unless pyproject.toml
# rules them out: `make lock UPGRADE="django ruff"` upgrades those, `UPGRADE=all` everything.
# The test lock is resolved first; the run lock is constrained by it, so both pin one version.
UV_VERSION := 0.13.9
UV := $(VENV)/uv-$(UV_VERSION)/bin/uv
UPGRADE ?=
LOCK_OPTIONS := --quiet --generate-hashes --python-version 3.12 \
	--python-platform x86_64-unknown-linux-gnu --custom-compile-command "make lock"

$(UV): | venv-check
	$(PIP) --target $(VENV)/uv-$(UV_VERSION) uv==$(UV_VERSION) 2>&1 | $(PIP_QUIET)

lock: $(UV)
	@upgrade=(); \
	for package in $(UPGRADE); do \
		if [[ $$package == all ]]; then upgrade+=(--upgrade); \
		else upgrade+=(--upgrade-package "$$package"); fi; \
	done; \
	set -x; \
	$(UV) pip compile $(LOCK_OPTIONS) "$${upgrade[@]}" pyproject.toml --extra test -o $(TEST_LOCK); \
	$(UV) pip compile $(LOCK_OPTIONS) pyproject.toml -c $(TEST_LOCK) -o $(RUN_LOCK)

# Debian's chromium (browser tests), docker-registry (controller tests against a real registry),
# podman, runc and debootstrap (the image's build-and-run test) and Node.js with npm (the
# browser tests' npm packages). Installed only when missing, and only
# as root; otherwise those tests skip.
system-test-deps:
	@missing=""; \
	[[ -x /usr/bin/chromium ]] || missing="$$missing chromium"; \
	[[ -x /usr/bin/docker-registry ]] || missing="$$missing docker-registry"; \
	command -v podman >/dev/null || missing="$$missing podman"; \
	command -v runc >/dev/null || missing="$$missing runc"; \
	command -v debootstrap >/dev/null || missing="$$missing debootstrap"; \
	command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	if [[ -n "$$missing" ]]; then \
		if [[ $$(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then \
			echo "installing$$missing (apt)"; \
			export DEBIAN_FRONTEND=noninteractive; \
			apt-get -o DPkg::Lock::Timeout=300 update -qq; \
			apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends $$missing; \
		else \
			echo "warning:$$missing missing and not root: those tests will be skipped" >&2; \
		fi; \
	fi

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/vulture

typecheck: $(TEST_STAMP)
	$(VENV)/bin/mypy runtimes nodus_console benchmarks

pytest: pytest-main pytest-postgres pytest-browser

# The list and watch semantics again on PostgreSQL (the machine's, trust auth), the scale-out
# database: the same read path over it. A database of its own per run (pytest-django makes and
# drops test_<name>_gwN). Without PostgreSQL it is skipped, except under CI.
PG_TESTS := tests/api/test_api_list.py tests/api/test_api_list_index.py tests/api/test_api_watch.py \
	tests/api/test_api_watch_stream.py tests/watch/test_cache.py tests/watch/test_hub.py \
	tests/watch/test_informer.py tests/storage/test_store_locks.py
PG_URL := postgres://postgres@127.0.0.1:5432/postgres?test_name=nodus_pytest_$(shell echo $$PPID)
pytest-postgres: $(TEST_STAMP)
	@if ! (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null && [[ -z "$${CI:-}" ]]; then \
		echo "skipped: nothing listens on 127.0.0.1:5432 (PostgreSQL)"; exit 0; fi; \
	DATABASE_URL="$(PG_URL)" $(PY) -m pytest -m "not browser" -n $(PYTEST_WORKERS) -q $(PG_TESTS) $(PYTEST_ARGS)

# The sync Playwright plugin and pytest-asyncio cannot share one event loop in one run, so browser
# tests get their own invocation. Exit code 5 ("no tests") passes only where no test carries the
# mark at all; anywhere else it means tests went missing and fails the build.
pytest-main: $(TEST_STAMP)
	$(PY) -m pytest -m "not browser" -n $(PYTEST_WORKERS) --durations=15 $(PYTEST_ARGS)

pytest-browser: $(TEST_STAMP) system-test-deps $(NODE_STAMP) $(EDITOR_BUNDLE)
	@rc=0; $(PY) -m pytest -m browser -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS) || rc=$$?; \
	if [[ $$rc -eq 5 ]] && ! grep -rqs "mark.browser" tests/; then \
		echo "no browser tests yet"; rc=0; \
	fi; \
	exit $$rc

# Retakes the screenshots the docs show (the README's catalog) from a live server.
screenshots: $(TEST_STAMP) system-test-deps $(NODE_STAMP) $(EDITOR_BUNDLE)
	NODUS_UPDATE_SCREENSHOTS=1 $(PY) -m pytest -m browser -p no:xdist \
		tests/browser/test_readme_screenshot_browser.py

bench: $(TEST_STAMP)
	$(PY) benchmarks/run.py

# The herd case at the size projects reach: 10,000 objects and a herd of 1,000 informers, beside
# etcd (Debian's etcd-server) in the same run, ratios nodus / etcd printed (about 15 minutes).
bench-scale: $(TEST_STAMP)
	BENCH_HERD_OBJECTS=10000 BENCH_HERD_CLIENTS=1000 BENCH_HERD_WATCHERS=1000 BENCH_HERD_BIG=0 \
		$(PY) benchmarks/run.py herd

clean:
	rm -rf .mypy_cache .ruff_cache .pytest_cache .hypothesis
