# kmedic: `make demo` and `make test` are all a newcomer needs; both bootstrap what they need.
PY := .venv/bin/python
VENV_BIN := .venv/bin

.PHONY: bootstrap test lint typecheck unit integration shake demo bench clean

bootstrap:
	@python3 scripts/bootstrap.py

lint: bootstrap
	$(VENV_BIN)/ruff check kmedic agent streaming manager composition tests bench scripts
	$(VENV_BIN)/ruff format --check kmedic agent streaming manager composition tests bench scripts
	$(VENV_BIN)/lint-imports --no-cache

typecheck: bootstrap
	$(VENV_BIN)/mypy

unit: bootstrap
	$(PY) -m pytest tests/unit -q

integration: bootstrap
	$(PY) -m pytest tests/integration tests/e2e -q

test: lint typecheck
	$(PY) -m pytest tests -q --durations=25

# The property tests under SEEDS random seeds (`make test` draws the same examples every run).
SEEDS ?= 5
shake: bootstrap
	@files=$$(grep -l "@given" tests/unit/*.py); for s in $$(seq 1 $(SEEDS)); do \
	  echo "== seed $$s"; KMEDIC_HYPOTHESIS=shake $(PY) -m pytest -q -p no:cacheprovider \
	  --hypothesis-seed=$$s $$files || exit 1; done

demo: bootstrap
	$(VENV_BIN)/kmedic demo

bench: bootstrap
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf .venv .cache
