# Two commands for a new user: `make run` (set up, then the main job) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS := tf,jax,dev,serving,openvino,peers
comma := ,
# Named for the extras, so that a change to them (and not any other edit here) installs again.
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: run test test-long format docs clean

$(STAMP): setup.py constraints.txt
	@echo "Setting up $(VENV): TensorFlow, JAX and the pinned packages of constraints.txt (first time only; a few minutes)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar on -c constraints.txt -e ".[$(EXTRAS)]"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m arena_tf.demo

# ruff (ruff.toml), the whole suite on TensorFlow, then the layer oracles and the JAX trainer's
# tests on JAX.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q -n 2 --dist loadgroup tests
	KERAS_BACKEND=jax $(PY) -m pytest -q -n 2 tests/layers tests/jax

# ruff's safe fixes (import order) and its layout, as `make test` checks them.
format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Learning checks too long for every run (Pathfinder: about 30 minutes on 2 CPU cores).
test-long: $(STAMP)
	$(PY) -m pytest -q -rA --long -m long tests

# The generated docs (reports, the README's results, the layer catalogue) from their sources.
docs: $(STAMP)
	$(PY) tools/regenerate_docs.py

clean:
	rm -rf $(VENV) runs
