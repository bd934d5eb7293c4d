# Two entry points, each doing all set-up on a fresh machine:
#   make demo   runs the main job on the embedded default (real weights, real data)
#   make test   runs the whole suite once per Keras backend; fails if any backend fails
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
BACKENDS := tensorflow jax torch

.PHONY: setup demo test lint bench

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $@

demo: setup
	$(PY) examples/demo.py

test: setup
	@# the fine-tuned classifier that tests share, trained once per code version
	$(PY) -c "from tests.trained_models import demo_classifier_preset as p; p()"
	@status=0; for backend in $(BACKENDS); do \
		echo "=== KERAS_BACKEND=$$backend"; \
		KERAS_BACKEND=$$backend TF_CPP_MIN_LOG_LEVEL=3 $(PY) -m pytest -q -n 2 --dist loadfile --durations=15 tests || status=1; \
	done; exit $$status

lint: setup
	$(VENV)/bin/ruff format --check kbert tests benchmarks examples
	$(VENV)/bin/ruff check kbert tests benchmarks examples

bench: setup
	$(PY) benchmarks/end_to_end.py
