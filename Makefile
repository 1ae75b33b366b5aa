# kmedic: `make demo` and `make test` are all a newcomer needs; both bootstrap what they need.
PY := .venv/bin/python
VENV_BIN := .venv/bin

.PHONY: bootstrap test lint typecheck unit integration containers shake demo soak soak-short bench image clean

bootstrap:
	@python3 scripts/bootstrap.py

lint: bootstrap
	$(VENV_BIN)/ruff check kmedic agent streaming manager composition tests bench scripts
	$(VENV_BIN)/ruff format --check kmedic agent streaming manager composition tests bench scripts
	$(VENV_BIN)/lint-imports --no-cache

# The packages, then the benchmarks and scripts (not packages: checked as files).
typecheck: bootstrap
	$(VENV_BIN)/mypy
	$(VENV_BIN)/mypy bench scripts

unit: bootstrap
	$(PY) -m pytest tests/unit -q

integration: bootstrap
	$(PY) -m pytest tests/integration tests/e2e -q

# The tests that use the cluster fixture and run again with every node in a container
# (KMEDIC_TEST_CLUSTER=testcontainers; docs/testing.md).
CONTAINER_CLUSTER_TESTS := tests/integration/test_container_cluster.py \
  tests/integration/test_agent_cluster.py \
  tests/integration/test_agent_cli.py tests/integration/test_agent_reassignment.py \
  tests/integration/test_executor.py

# Every test in two lanes (pytest-xdist): a whole module to a lane, the longest first and the
# unit tests last (tests/lanes.py); then the container cluster tests.
test: lint typecheck
	$(PY) -m pytest tests/integration tests/e2e tests/unit -q -n 2 --dist loadfile \
	  --no-loadscope-reorder --durations=40
	@$(MAKE) --no-print-directory containers

containers: bootstrap
	KMEDIC_TEST_CLUSTER=testcontainers $(PY) -m pytest -q --durations=5 $(CONTAINER_CLUSTER_TESTS)

# The property tests under SEEDS random seeds (`make test` draws the same examples every run).
SEEDS ?= 5
shake: bootstrap
	@files=$$(grep -l "@given" tests/unit/*.py); for s in $$(seq 1 $(SEEDS)); do \
	  echo "== seed $$s"; KMEDIC_HYPOTHESIS=shake $(PY) -m pytest -q -p no:cacheprovider \
	  --hypothesis-seed=$$s $$files || exit 1; done

demo: bootstrap
	$(VENV_BIN)/kmedic demo

# The chaos soak (docs/reliability.md): MINUTES of seeded faults under Kafka's verifiable
# producer and consumer; SEED=N reproduces a run.
MINUTES ?= 60
THROUGHPUT ?= 100
soak: bootstrap
	$(VENV_BIN)/kmedic soak --minutes $(MINUTES) --throughput $(THROUGHPUT) $(if $(SEED),--seed $(SEED))

# The short seeded variant (about 5 minutes): one heal whose leading manager is killed mid-heal
# while ZooKeeper is paused and the controller quorum's leader is killed, then two brokers dead
# past the grace (the page must fire) while the leader's ZooKeeper packets are dropped; `make
# test` runs it (tests/e2e/test_soak_short.py).
soak-short: bootstrap
	$(VENV_BIN)/kmedic soak --minutes 1 --no-stream --throughput 100 --seed 20261125 \
	  --warranted-page yes --leader-drop

# The container image: docker when an engine runs, podman otherwise (scripts/image.py).
image:
	@python3 scripts/image.py

bench: bootstrap
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf .venv .cache
