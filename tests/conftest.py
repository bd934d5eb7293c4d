import os

# One core per pytest-xdist worker for PyTorch (OpenMP) and XLA, whose pools
# spin: two workers spanning both cores of a 2-core machine starve each
# other (two MiniLM predicts side by side on PyTorch: 22 s each, 4 s with
# one thread each; JAX 9.7 s, 7.1 s; TensorFlow's pools gained nothing).
# The frameworks read these when they load, so they are set before Keras.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    _THREADS = max(1, (os.cpu_count() or 1) // _WORKERS)
    os.environ.setdefault("OMP_NUM_THREADS", str(_THREADS))
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + f" --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads={_THREADS}"
    ).strip()

# Tests compile many small XLA programs (JAX) and time none: LLVM at -O0
# compiles a tiny classifier's train step 2.8x faster (5.5 s -> 2.0 s) and
# runs a MiniLM predict about 20% slower; four JAX model test files took
# 198 s instead of 260 s (-n 2). Users keep XLA's default. TensorFlow's runs
# were unchanged (128 s both ways), PyTorch does not use XLA.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0"
).strip()

import keras  # noqa: E402
import pytest  # noqa: E402

import kbert  # noqa: E402
from tests.test_case import tensorflow_functions_eagerly, tiny_backbone  # noqa: E402

pytest_plugins = ["tests.file_order"]

WORDS = "good great fun bad dull awful movie plot the a was very not".split()
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]


# Where a check is of kbert's own Python and not of a backend, it runs once,
# in the PyTorch run: Keras runs small models eagerly there, while the
# TensorFlow and JAX runs trace and compile every new model (the same tiny
# classifier's fit and predict: 0.6 s on PyTorch, 6-8 s on TensorFlow,
# 10-12 s on JAX, measured with --durations on this suite).
ONCE_ON = "torch"


def pytest_collection_modifyitems(config, items):
    _check_whole_machine_files(items)
    if keras.backend.backend() == ONCE_ON:
        return
    skip = pytest.mark.skip(reason="backend-independent: checked once, in the PyTorch run")
    for item in items:
        if item.get_closest_marker("backend_independent"):
            item.add_marker(skip)


def _check_whole_machine_files(items):
    """`make test` runs whole_machine tests from the files that name the mark
    (it greps for them); a test marked some other way would not run there."""
    for item in items:
        if item.get_closest_marker("whole_machine"):
            text = item.path.read_text(encoding="utf-8")
            if "whole_machine" not in text:
                raise pytest.UsageError(
                    f"{item.nodeid} is marked whole_machine but its file does not "
                    "say so: mark it in the file (make test finds them by name)."
                )


@pytest.fixture(autouse=True)
def _eager_on_tensorflow(request):
    """Tests of kbert's logic over tiny models (tasks' outputs, errors for bad
    targets and inputs, long texts' windows, raw strings) run their
    `tf.function`s eagerly on TensorFlow: the same ops, without a trace per
    fresh model (the six marked files, -n 2: 137 s -> 108 s). The traced
    path stays checked: `run_model_test` traces every model, tests not so
    marked trace as users do, and the JAX run compiles every test (JAX op by
    op, `jax.disable_jit()`, was slower: test_long_texts.py 202 s against
    120 s, test_tasks.py 142 s against 118 s, one process, Intel Xeon with
    AMX, 2026-12-03)."""
    eagerly = bool(request.node.get_closest_marker("eager_on_tensorflow"))
    with tensorflow_functions_eagerly(eagerly):
        yield


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1337)
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture(scope="session")
def tiny_preset(tmp_path_factory):
    """A kbert preset of a tiny random backbone with a real vocabulary."""
    from kbert.preprocessing.preprocessor import BertPreprocessor
    from kbert.preprocessing.tokenizer import BertTokenizer

    keras.utils.set_random_seed(1337)
    directory = tmp_path_factory.mktemp("tiny") / "preset"
    preprocessor = BertPreprocessor(BertTokenizer(VOCABULARY), sequence_length=12)
    backbone = tiny_backbone(vocabulary_size=len(VOCABULARY))
    kbert.BertTextEmbedder(backbone, preprocessor=preprocessor).save_to_preset(directory)
    return str(directory)
