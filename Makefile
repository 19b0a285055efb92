# mrsched developer entry points. Each target sets up what it needs on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: all demo deps venv binaries lint unit test chaos bench bench-summaries bench-kube-peer bench-physics bench-learning bench-steady bench-speed bench-kubernetes bench-kubernetes-heldout bench-sls bench-dara-alpha bench-dara-search bench-stress bench-workers bench-operator bench-scale bench-loop bench-live calibrate cluster-up cluster-down lock clean manifests images

all: test

demo: deps venv binaries  ## a small job end to end on a throw-away local cluster: its status and output
	$(BIN)/mrsched demo

images:  ## the operator and worker images, tagged as the chart's defaults (docker or podman; docs/kind.md)
	hack/build-images.sh

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
	$(BIN)/ruff check operator workers tests e2e bench
	$(BIN)/ruff format --check operator workers tests e2e bench
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: venv  ## tests that need no cluster (UNIT_FLAGS: extra pytest flags, e.g. -x)
	$(BIN)/pytest $(UNIT_FLAGS) tests/unit tests/workers

test: deps venv binaries lint  ## everything: lint, unit tests, and tests on the local control plane (not the slow chaos cases)
	$(BIN)/pytest -m "not slow" --durations=25

chaos: deps venv binaries  ## the whole chaos and fuzz suite (tests/chaos), its slow cases included
	$(BIN)/pytest tests/chaos --durations=25

bench-live: deps venv binaries  ## the statistical live tests (ThroughputScheduler's learning, disk-health diagnosis) on the local control plane, their numbers into bench/results/live-learning.txt
	set -o pipefail; $(BIN)/pytest -m slow tests/cluster -s -p no:cacheprovider --durations=5 2>&1 | tee bench/results/live-learning.txt

SCENARIOS ?= $(wildcard bench/scenarios/*.yaml)
MODES ?= hadoop kubernetes
BENCH_JOBS ?= $(shell nproc)

# Each scenario in each placement mode (the same for every policy of a run) into bench/results/<mode>/<scenario>/,
# BENCH_JOBS runs at a time; e.g. make bench SCENARIOS="bench/scenarios/gupta-ch3-*.yaml" MODES=hadoop
bench: venv  ## every scenario under every policy it names, in each placement mode it lists (default both), into bench/results/ (commit them)
	@set -eo pipefail; $(PY) bench/bench_runs.py --modes "$(MODES)" $(SCENARIOS) \
	  | xargs -P $(BENCH_JOBS) -L 1 sh -c 'n=$$(basename $$1 .yaml); mkdir -p bench/results/$$0; \
	      $(BIN)/mrsched simulate $$1 --mode $$0 --out bench/results/$$0/$$n > bench/results/$$0/$$n.log 2>&1 \
	      && rm bench/results/$$0/$$n.log && echo "$$0 $$n done" || { echo "$$0 $$n FAILED: bench/results/$$0/$$n.log"; exit 255; }'
	$(MAKE) bench-summaries

bench-summaries: venv  ## the per-paper summaries and the results index, from the committed results.json
	@set -e; for m in $(MODES); do \
	  for script in dara elkholy dhok tan yao; do \
	    $(PY) bench/$${script}_summary.py --results bench/results/$$m --out bench/results/$$m/$$script-summary.md > /dev/null \
	      || echo "$$script summary skipped in $$m (its scenarios have not run there)"; \
	  done; \
	done
	$(PY) bench/summarise.py bench/results > bench/results/README.md

bench-learning: venv  ## ThroughputScheduler's learning curves (κ, θ, makespan) on J_IO + Pi repeated
	$(PY) bench/learning_curves.py --out bench/results/learning-throughput

bench-steady: venv  ## seed 002 ch.6 in steady state: diagnosis vs frozen beliefs on Table 4.3's workloads (after make bench)
	@set -e; for m in $(MODES); do $(PY) bench/gupta_ch6_steady.py --seeds 1,2,3,4,5 --mode $$m; done

bench-speed: venv  ## simulator events/s, Fair's round latency, a sweep with --jobs 1 and 2, every policy's call at 100, 1,000 and 5,000 nodes; the whole SWIM day under all twelve policies (5 seeds) and on 1,000 nodes under FIFO, Fair and DARA (bench/simulator_day.py, about 40 minutes)
	$(PY) bench/simulator_speed.py
	OPENBLAS_NUM_THREADS=1 $(PY) bench/simulator_day.py --profile 15 --seeds 1,2,3,4,5

bench-kubernetes: venv  ## the Kubernetes-mode contest (concurrency by requests, every policy vs kube-default, 5 seeds, and again under the pessimistic-packing physics) into bench/results/kubernetes-mode.md
	$(PY) bench/kubernetes_contest.py --physics pessimistic
	$(PY) bench/kubernetes_contest.py --out bench/results/kubernetes-mode.md

bench-kubernetes-heldout: venv  ## the contest's job rule on the scenarios it was not chosen on, into bench/results/kubernetes-heldout.md
	$(PY) bench/kubernetes_heldout.py --out bench/results/kubernetes-heldout.md

bench-sls: venv  ## our simulator in YARN mode against Apache Hadoop SLS 3.3.5 (real YARN Fair and Capacity) on bench/peers/sls/traces, job by job, into bench/results/sls/ (SLS runs in wall time: about 45 minutes uncached, seconds once its results are cached)
	$(PY) bench/peers/sls/compare.py

bench-kube-peer: deps venv binaries  ## the simulator's kube-default against the real kube-scheduler on the same pod streams (3 runs each), into bench/results/kube-scheduler-peer.md (about 15 minutes)
	$(PY) bench/peers/kube-scheduler/peer.py --out bench/results/kube-scheduler-peer.md

bench-physics: venv  ## each measured-physics switch (cluster.physics) alone and all together, both modes
	$(PY) bench/physics_switches.py --out bench/results/physics-switches.md

bench-dara-alpha: venv  ## DARA's offline alpha by least squares on the simulator's physics (thesis §4.2.3)
	$(PY) bench/dara_alpha_fit.py --out bench/results/dara-alpha-fit.txt

bench-dara-search: venv  ## DARA's local search (past exhaustiveLimit) against Eq 4.16's exhaustive argmax, into bench/results/dara-search-gap.txt (about 3 minutes)
	$(PY) bench/dara_search_gap.py --out bench/results/dara-search-gap.txt

bench-stress: venv  ## every policy's peak memory and CPU per round with 60 jobs at once on 30 nodes of four classes (each in a fresh process), into bench/results/policy-stress.txt (about 5 minutes)
	$(PY) bench/policy_stress.py --out bench/results/policy-stress.txt

bench-workers: venv  ## worker map throughput (MB/s) and peak memory on 8x the sort buffer
	$(PY) bench/worker_throughput.py --out bench/results/worker-throughput.txt

calibrate: venv  ## our workers' map tasks at 1-8 concurrent tasks here, the physics fitted to them (bench/results/calibration/)
	$(PY) bench/calibrate.py

bench-operator: deps venv binaries  ## the operator's pods placed/s and round latency on 200 emulated nodes
	$(PY) bench/operator_placement.py --out bench/results/operator-placement.txt

bench-scale: deps venv binaries  ## the operator at 1,000 nodes and 10,000 task pods (watch caches) against the real kube-scheduler on the same apiserver, into bench/results/operator-scale.txt
	$(PY) bench/operator_scale.py --idle-rounds 10 --out bench/results/operator-scale.txt

bench-loop: venv  ## the scheduling loop's own CPU per pod and idle round over an in-memory API (1,000 nodes, 10,000 pods), into bench/results/loop-cpu.txt
	$(PY) bench/loop_cpu.py --out bench/results/loop-cpu.txt

cluster-up: deps venv binaries  ## a local cluster for kubectl: prints KUBECONFIG and the Prometheus URL
	$(BIN)/mrsched cluster up

cluster-down: venv
	$(BIN)/mrsched cluster down

manifests: binaries  ## copy crds/ into the chart and render it into manifests/mrsched.yaml (commit both; tests check)
	@set -euo pipefail; \
	source operator/mrsched/data/toolchain.env; \
	helm="$${MRSCHED_BIN_DIR:-$${MRSCHED_CACHE_DIR:-$$HOME/.cache/mrsched}/bin/helm-$$HELM_VERSION}/helm"; \
	cp crds/*.yaml charts/mrsched/crds/; \
	{ echo "# generated by make manifests; do not edit"; \
	  echo "# helm template mrsched charts/mrsched --namespace mrsched-system --include-crds"; \
	  "$$helm" template mrsched charts/mrsched --namespace mrsched-system --include-crds; } > manifests/mrsched.yaml.tmp \
	  || { rm -f manifests/mrsched.yaml.tmp; exit 1; }; \
	mv manifests/mrsched.yaml.tmp manifests/mrsched.yaml; \
	echo "rendered manifests/mrsched.yaml"

lock:  ## re-resolve requirements-dev.lock from pyproject.toml (needs uv)
	uv pip compile pyproject.toml --extra dev --python-version 3.11 -o requirements-dev.lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache
