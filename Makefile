# mrsched developer entry points. Each target sets up what it needs on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: all deps venv binaries lint unit test bench bench-speed bench-workers cluster-up cluster-down lock clean

all: test

deps:  ## Debian packages (Prometheus)
	hack/install-system-deps.sh

$(VENV)/.installed: requirements-dev.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $@

venv: $(VENV)/.installed  ## Python environment from the lock file

binaries:  ## kube-apiserver, kube-scheduler, kube-controller-manager, kubectl, etcd, kwokctl, kwok, helm
	hack/build-binaries.sh

lint: venv  ## ruff, mypy and the import-layer contracts
	$(BIN)/ruff check operator workers tests bench
	$(BIN)/ruff format --check operator workers tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: venv  ## tests that need no cluster
	$(BIN)/pytest tests/unit tests/workers

test: deps venv binaries lint  ## everything: lint, unit tests, and tests on the local control plane
	$(BIN)/pytest

SCENARIOS := $(wildcard bench/scenarios/*.yaml)

bench: venv  ## every scenario under every baseline, into bench/results/<scenario>/ (commit them)
	@set -e; for s in $(SCENARIOS); do \
	  name=$$(basename $$s .yaml); \
	  $(BIN)/mrsched simulate $$s --out bench/results/$$name; \
	done
	$(PY) bench/summarise.py bench/results > bench/results/README.md

bench-speed: venv  ## simulator events/s and Fair's scheduling-round latency
	$(PY) bench/simulator_speed.py

bench-workers: venv  ## worker map throughput (MB/s) and peak memory on 8x the sort buffer
	$(PY) bench/worker_throughput.py --out bench/results/worker-throughput.txt

cluster-up: deps venv binaries  ## a local cluster for kubectl: prints KUBECONFIG and the Prometheus URL
	$(BIN)/mrsched cluster up

cluster-down: venv
	$(BIN)/mrsched cluster down

lock:  ## re-resolve requirements-dev.lock from pyproject.toml (needs uv)
	uv pip compile pyproject.toml --extra dev --python-version 3.11 -o requirements-dev.lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache
