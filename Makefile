# Karty. `make run` plays locally at http://127.0.0.1:8080; `make test` runs everything.
# Both install what they need first (a .venv, and Debian packages when run as root).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test test-cluster bench lint system-deps install redis clean

run: install
	$(PY) -m webapp --local

test: system-deps install redis
	$(PY) -m ruff check .
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The store suite (and the two-process cluster tests) on a throwaway Redis Cluster:
# 3 primaries + 3 replicas on free loopback ports, stopped by pid afterwards (scripts/redis_cluster.py).
CLUSTER_TESTS ?= tests/test_store_*.py tests/test_webapp_limits.py $(wildcard tests/test_cluster*.py)
test-cluster: system-deps install
	$(PY) scripts/redis_cluster.py --primaries 3 --replicas 1 -- $(PY) -m pytest -q -m redis $(CLUSTER_TESTS) $(PYTEST_ARGS)

bench: install
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m benchmarks

lint: install
	$(PY) -m ruff check .

# Debian packages the tests need: redis-server and chromium (browser tests).
system-deps:
	@scripts/system-deps.sh

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Start a local Redis on 127.0.0.1:6379 unless one already answers.
redis:
	@scripts/ensure-redis.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache test-output
