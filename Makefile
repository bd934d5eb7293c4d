# Two entry points, each doing all set-up on a fresh machine:
#   make demo   runs the main job on the embedded default (real weights, real data)
#   make test   runs the whole suite once per Keras backend; fails if any backend fails
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
BACKENDS := tensorflow jax torch

.PHONY: setup demo test lint bench

# The test files with whole_machine tests: the serial run collects only these
# (its start-up took 12-14 s per backend collecting all of tests/ again, 7 s
# with these; tests/conftest.py refuses a whole_machine test whose file does
# not name the mark).
WHOLE_MACHINE_FILES = $(shell grep -rl --include='test_*.py' whole_machine tests)

setup: $(VENV)/.installed

# uv installs the pins of pyproject.toml in about a minute where pip takes
# about nine (measured here); it does not read pip's configuration, so pip's
# find-links and extra index URLs (env or config) are passed on, and pip's
# "best version from any index" rule kept. pip installs if uv fails.
# --compile-bytecode: unlike pip, uv writes no .pyc files, and where
# PYTHONDONTWRITEBYTECODE is set (this machine) Python never does either, so
# every process compiled TensorFlow's source again: `import kbert` took 13.3 s
# on TensorFlow, 7.9 s on JAX, 14.4 s on PyTorch; 5.3, 3.2 and 5.7 s with
# the bytecode, which costs about 40 s once.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q uv==0.13.8
	@links="$${PIP_FIND_LINKS:-$$($(PY) -m pip config get global.find-links 2>/dev/null)}"; \
	extra="$${PIP_EXTRA_INDEX_URL:-$$($(PY) -m pip config get global.extra-index-url 2>/dev/null)}"; \
	if [ -n "$$links" ]; then export UV_FIND_LINKS="$$links"; fi; \
	if [ -n "$$extra" ]; then export UV_EXTRA_INDEX_URL="$$extra"; fi; \
	echo "uv pip install -e .[test] (find-links: $${links:-none}; extra indexes: $${extra:-none})"; \
	UV_INDEX_STRATEGY=unsafe-best-match $(VENV)/bin/uv pip install --python $(PY) -q \
		--compile-bytecode -e ".[test]" \
		|| $(PY) -m pip install -q -e ".[test]"
	touch $@

demo: setup
	$(PY) examples/demo.py

test: setup
	@# the fine-tuned classifier that tests share, trained once per code version
	$(PY) -c "from tests.trained_models import demo_classifier_preset as p; p()"
	@# longest test files first (tests/file_order.py) so that both workers end together;
	@# tests marked whole_machine start worker processes of their own: they run
	@# after the parallel run, one at a time, so that none competes for the 2 cores
	@status=0; for backend in $(BACKENDS); do \
		echo "=== KERAS_BACKEND=$$backend"; \
		KERAS_BACKEND=$$backend TF_CPP_MIN_LOG_LEVEL=3 $(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder \
			-m "not whole_machine" --durations=15 tests || status=1; \
		KERAS_BACKEND=$$backend TF_CPP_MIN_LOG_LEVEL=3 $(PY) -m pytest -q \
			-m whole_machine --durations=5 $(WHOLE_MACHINE_FILES) || status=1; \
	done; exit $$status

lint: setup
	$(VENV)/bin/ruff format --check kbert tests benchmarks examples
	$(VENV)/bin/ruff check kbert tests benchmarks examples

bench: setup
	$(PY) benchmarks/end_to_end.py
