"""One classifier on every runtime kbert deploys to: strings -> predictions.

The model: the demo's classifier (all-MiniLM-L6-v2 fine-tuned on Rotten
Tomatoes with `examples/demo.py`'s recipe, one epoch on JAX; cached in the
work directory, or `--preset` reuses a saved one such as the tests'
`.test-cache/demo_classifier-*`). It is exported with `kbert.export` to a
SavedModel, every TFLite flavour and quantization, ONNX from each backend,
ONNX `dynamic_int8`, `int8` (static) and `float16`, the string-flavour ONNX
(float32 and `dynamic_int8`), OpenVINO IRs (float32 and NNCF `int8`, token
ids and strings in), and each artifact is measured against Keras with
`kbert verify` (ONNX files on onnxruntime and OpenVINO).

Then, in one process, each system classifies the 1,281 held-out test
reviews, strings in, predicted classes out, as its users run it:

- Keras `model.predict(texts, batch_size=32)` (kbert's own raw-string path)
  on TensorFlow, JAX and PyTorch, float32 and bfloat16 (`dtype="bfloat16"`):
  each backend in its own worker process, driven from the timing process
  so that its passes interleave with the others';
- token ids in: onnxruntime (float32, float16, dynamic_int8, int8) and
  OpenVINO (the IR at the plugin's default precision and at float32
  forced, the NNCF int8 IR, the dynamic_int8 ONNX file): Hugging Face
  `tokenizers` with the model's vocabulary, reviews sorted by token length,
  batches of 32 padded to the batch's longest review;
- LiteRT `token_ids` files (batch 1, dynamic length, as apps run them): the
  same tokenizer, one review at a time at its own length;
- strings in, the tokenizer inside the artifact, texts in batches of 32 (in
  the reviews' order): LiteRT `string` files, the SavedModel's text
  signature, the string ONNX files on onnxruntime with onnxruntime-extensions'
  ops (padded to the preprocessor's `sequence_length`), the string OpenVINO
  IRs with openvino-tokenizers' ops (padded to the batch's longest text).

Every runtime gets `--threads` threads (2) where it has the setting, and
every process here (the timing one, the Keras workers, the matmul limit) is
pinned to that many cores. Systems run in turn (rotating order) for
`--rounds` rounds after a warm-up pass; the table gives each one's median,
its speed relative to onnxruntime float32 and to Keras `predict` (float32 on
`--keras-backend`), its argmax agreement with that Keras row, and the share
of this CPU's matmul limit it reaches: the best 2048 x 2048 matmul of
`benchmarks/matmul_limit.py` on the same cores (float32 and bfloat16 over
torch, TensorFlow, JAX; int8 = onnxruntime's `MatMulInteger`, uint8 x int8).
A review's work is counted on its real tokens n (no padding): 2 x the
encoder's dense weights (Q, K, V, output, both feed-forward layers) x n +
4 x layers x hidden x n^2 (the attention products) + the pooler and head;
padding, tokenization and everything else count as lost time.

`--quick` (128 reviews, 1 round, the exports the table needs, no `kbert
verify` table) checks the whole path in minutes; the full run is the
default. Ratios are from one run on the CPU printed at the top.

    python benchmarks/runtimes.py --workdir /tmp/kbert-runtimes   # ~1-1.5 hours on 2 cores
    python benchmarks/runtimes.py --workdir /tmp/kbert-runtimes --skip-export
    python benchmarks/runtimes.py --quick --preset .test-cache/demo_classifier-...
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import matmul_limit  # noqa: E402
from common import (  # noqa: E402
    finetune_demo_classifier,
    print_table,
    run_worker,
    worker_environment,
)
from end_to_end import cpu_description  # noqa: E402

BATCH = 32
THREADS = 2
QUICK_REVIEWS = 128
TFLITE = [
    ("string", None),
    ("string", "dynamic_int8"),
    ("token_ids", None),
    ("token_ids", "float16"),
    ("token_ids", "dynamic_int8"),
    ("token_ids", "int8"),
    ("mediapipe", None),
    ("mediapipe", "dynamic_int8"),
]
BACKENDS = ("tensorflow", "jax", "torch")
ONNX_QUANTIZATIONS = ("dynamic_int8", "int8", "float16")
# flavour, quantization, directory
OPENVINO = [
    ("token_ids", None, "openvino"),
    ("token_ids", "int8", "openvino_int8"),
    ("string", None, "openvino_text"),
    ("string", "int8", "openvino_text_int8"),
]
KERAS_PRECISIONS = ("float32", "bfloat16")


def artifact_paths(workdir):
    paths = {"saved_model": os.path.join(workdir, "saved_model")}
    for flavour, quantization in TFLITE:
        name = f"{flavour}_{quantization or 'float32'}"
        paths[f"tflite {name}"] = os.path.join(workdir, f"classifier_{name}.tflite")
    for backend in BACKENDS:
        paths[f"onnx {backend}"] = os.path.join(workdir, f"classifier_{backend}.onnx")
    for quantization in ONNX_QUANTIZATIONS:
        paths[f"onnx {quantization}"] = os.path.join(
            workdir, f"classifier_torch_{quantization}.onnx"
        )
    paths["onnx string float32"] = os.path.join(workdir, "classifier_text.onnx")
    paths["onnx string dynamic_int8"] = os.path.join(
        workdir, "classifier_text_dynamic_int8.onnx"
    )
    for flavour, quantization, directory in OPENVINO:
        key = f"openvino {flavour} {quantization or 'float32'}"
        paths[key] = os.path.join(workdir, directory)
    return paths


def timed_artifacts():
    """The artifact keys the throughput table runs (what `--quick` exports)."""
    keys = ["saved_model", "onnx torch", "onnx string float32", "onnx string dynamic_int8"]
    keys += [f"onnx {quantization}" for quantization in ONNX_QUANTIZATIONS]
    keys += [
        f"tflite token_ids_{q}" for q in ("float32", "float16", "dynamic_int8", "int8")
    ]
    keys += [f"tflite string_{q}" for q in ("float32", "dynamic_int8")]
    keys += [f"openvino {f} {q or 'float32'}" for f, q, _ in OPENVINO]
    return keys


def backend_artifacts(backend):
    """The artifact keys the export worker on `backend` makes."""
    keys = [f"onnx {backend}"]
    if backend == "tensorflow":
        keys += ["saved_model"] + [f"tflite {f}_{q or 'float32'}" for f, q in TFLITE]
    if backend == "torch":
        keys += [f"onnx {quantization}" for quantization in ONNX_QUANTIZATIONS]
        keys += ["onnx string float32", "onnx string dynamic_int8"]
        keys += [f"openvino {f} {q or 'float32'}" for f, q, _ in OPENVINO]
    return keys


def refused(workdir):
    """`{key: reason}` of the exports refused in an earlier run of this work
    directory (not tried again; delete `refused.json` to retry them)."""
    path = os.path.join(workdir, "refused.json")
    if not os.path.exists(path):
        return {}
    with open(path) as file:
        return json.load(file)


def _exists(path):
    if os.path.isdir(path) and not path.endswith("saved_model"):
        return os.path.exists(os.path.join(path, "openvino_model.xml"))
    return os.path.exists(path)


def _agreement(record):
    """The agreement with Keras an export record gives (None if none)."""
    for part in (record.get("quantized"), record.get("verification")):
        value = (part or {}).get("agreement")
        if isinstance(value, dict):
            return value.get("value")
        if value is not None:
            return value
    return "ok"


# --- workers (one process each) ------------------------------------------------


def export_all(workdir, backend, preset=None, only=None):
    """Exports every artifact this backend makes (TF: SavedModel and TFLite;
    torch: ONNX, its quantizations, the string ONNX files and the OpenVINO
    IRs). `only`: the artifact keys wanted (others are skipped)."""
    import kbert.export as export
    from kbert.presets.model_source import load_model

    preset = preset or os.path.join(workdir, "classifier")
    model = load_model(preset)
    paths = artifact_paths(workdir)
    done = {}

    skip = refused(workdir)

    def wanted(key):
        return (only is None or key in only) and not _exists(paths[key]) and key not in skip

    def attempt(key, export_one):
        """Runs one export; a refusal is recorded (its row is then not timed)."""
        if not wanted(key):
            return
        start = time.perf_counter()
        try:
            record = export_one()
        except Exception as error:  # a verification the artifact fails
            done[key] = f"refused: {type(error).__name__}: {error}"[:400]
            return
        done[key] = {
            "agreement": _agreement(record),
            "seconds": round(time.perf_counter() - start, 1),
        }

    if backend == "tensorflow":
        if wanted("saved_model"):
            export.saved_model(model, paths["saved_model"], source=preset)
            done["saved_model"] = "ok"
        for flavour, quantization in TFLITE:
            key = f"tflite {flavour}_{quantization or 'float32'}"
            if not wanted(key):
                continue
            options = dict(flavour=flavour, quantization=quantization, source=preset)
            if quantization == "int8":
                # Full int8 is far from float32 on MiniLM: accept it knowingly,
                # so that `kbert verify` can show how far.
                options.update(tolerance=3.0, min_agreement=0.0)
            record = export.tflite(model, paths[key], **options)
            done[key] = record["verification"].get("agreement", {}).get("value")
    key = f"onnx {backend}"
    if wanted(key):
        export.onnx(model, paths[key], source=preset)
        done[key] = "ok"
    if backend != "torch":
        return done
    for quantization in ONNX_QUANTIZATIONS:
        # Static int8 is below 0.99 on MiniLM (export/README.md): kept
        # knowingly, so that the table shows how far.
        floor = {"min_agreement": 0.0} if quantization == "int8" else {}
        attempt(
            f"onnx {quantization}",
            lambda q=quantization, f=floor: export.onnx(
                model, paths[f"onnx {q}"], source=preset, quantization=q, **f
            ),
        )
    for quantization in (None, "dynamic_int8"):
        key = f"onnx string {quantization or 'float32'}"
        attempt(
            key,
            lambda k=key, q=quantization: export.onnx(
                model, paths[k], source=preset, flavour="string", quantization=q
            ),
        )
    for flavour, quantization, _ in OPENVINO:
        key = f"openvino {flavour} {quantization or 'float32'}"
        attempt(
            key,
            lambda k=key, f=flavour, q=quantization: export.openvino(
                model,
                paths[k],
                flavour=f,
                source=preset,
                quantization=q,
                overwrite=True,
            ),
        )
    return done


def verify_all(workdir, preset=None):
    from kbert.export.measurements import (
        artifact_row,
        artifact_runtimes,
        keras_row,
        measurement_table,
        time_rows,
    )
    from kbert.presets.model_source import load_model

    model = load_model(preset or os.path.join(workdir, "classifier"))
    repeats = 5
    options = dict(num_examples=200, repeats=repeats, timed=False)
    rows = [keras_row(model, **options)]
    for path in artifact_paths(workdir).values():
        if not _exists(path):
            continue
        for runtime in artifact_runtimes(path):
            rows.append(artifact_row(path, model, runtime=runtime, **options))
    # As `kbert verify` does: the rows timed interleaved.
    return {"table": measurement_table(time_rows(rows, repeats))}


def _tokenizer(preset, length):
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(os.path.join(preset, "vocab.txt"), lowercase=True)
    tokenizer.enable_truncation(max_length=length)
    return tokenizer


def _padded(encodings):
    import numpy as np

    longest = max(len(e.ids) for e in encodings)
    batch = {
        name: np.zeros((len(encodings), longest), "int32")
        for name in ("token_ids", "segment_ids", "padding_mask")
    }
    for row, encoding in enumerate(encodings):
        size = len(encoding.ids)
        batch["token_ids"][row, :size] = encoding.ids
        batch["segment_ids"][row, :size] = encoding.type_ids
        batch["padding_mask"][row, :size] = 1
    return batch


def _sorted_batches(tokenizer, run, texts, run_all=None):
    """Tokenize, sort by length, run batches of 32, return logits in order.
    `run_all` (a list of batches -> a list of logits), where given, takes
    every batch at once (OpenVINO's throughput mode)."""
    import numpy as np

    encodings = tokenizer.encode_batch(texts)
    order = np.argsort([len(e.ids) for e in encodings], kind="stable")
    groups = [order[start : start + BATCH] for start in range(0, len(order), BATCH)]
    batches = [_padded([encodings[i] for i in rows]) for rows in groups]
    outputs = run_all(batches) if run_all else [run(batch) for batch in batches]
    logits = np.zeros((len(texts), 2), "float32")
    for rows, out in zip(groups, outputs):
        logits[rows] = out
    return logits


def _one_at_a_time(tokenizer, run, texts):
    import numpy as np

    return np.concatenate([run(_padded([e])) for e in tokenizer.encode_batch(texts)])


def _text_batches(run, texts, run_all=None):
    import numpy as np

    batches = [np.array(texts[s : s + BATCH], object) for s in range(0, len(texts), BATCH)]
    return np.concatenate(run_all(batches) if run_all else [run(b) for b in batches])


# --- Keras predict, one worker process per backend ------------------------------


def keras_server(preset, reviews, threads):
    """A worker that holds the classifier in each precision on this backend and
    runs `predict` on the first `reviews` test reviews when told on stdin:
    `warm PRECISION` (answers the logits), `time PRECISION` (the seconds),
    `quit`. Answers are `KBERT {json}` lines on stdout."""
    import keras
    import numpy as np

    from kbert.data import rotten_tomatoes_split
    from kbert.presets.model_source import load_model

    backend = keras.backend.backend()
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
    elif backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
    texts = rotten_tomatoes_split(seed=0)["test"][0][:reviews]
    models, errors = {}, {}
    for precision in KERAS_PRECISIONS:
        try:
            overrides = {} if precision == "float32" else {"dtype": precision}
            models[precision] = load_model(preset, **overrides)
        except Exception as error:  # a precision this backend does not load
            errors[precision] = f"{type(error).__name__}: {error}"[:300]

    def answer(value):
        print("KBERT " + json.dumps(value), flush=True)

    answer({"ready": sorted(models), "errors": errors})
    for line in sys.stdin:
        command, _, precision = line.strip().partition(" ")
        if command == "quit":
            break
        try:
            start = time.perf_counter()
            logits = models[precision].predict(texts, batch_size=BATCH, verbose=0)
            seconds = time.perf_counter() - start
            logits = np.asarray(keras.ops.convert_to_numpy(logits), "float32")
            if command == "warm":
                answer({"logits": logits.tolist(), "seconds": seconds})
            else:
                answer({"seconds": seconds})
        except Exception as error:  # e.g. a dtype a kernel lacks on this backend
            answer({"error": f"{type(error).__name__}: {error}"[:300]})


class KerasWorker:
    """The timing process's handle on one `keras_server` process."""

    def __init__(self, backend, preset, reviews, threads, log):
        self.backend = backend
        self.process = subprocess.Popen(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--worker",
                "keras",
                "--preset",
                preset,
                "--reviews",
                str(reviews),
                "--threads",
                str(threads),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(log, "w"),  # noqa: SIM115 - the child keeps it
            text=True,
            env=worker_environment(backend, sorted(os.sched_getaffinity(0))),
        )
        self.ready = self._answer()

    def _answer(self):
        for line in self.process.stdout:
            if line.startswith("KBERT "):
                return json.loads(line[len("KBERT ") :])
        raise RuntimeError(f"the Keras worker on {self.backend} ended")

    def ask(self, command, precision):
        self.process.stdin.write(f"{command} {precision}\n")
        self.process.stdin.flush()
        answer = self._answer()
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def close(self):
        try:
            self.process.stdin.write("quit\n")
            self.process.stdin.flush()
        except OSError:
            pass
        self.process.wait(timeout=120)


def _remote(worker, precision):
    """A system whose passes run in `worker`: the first call is the warm-up
    (its logits), later calls time one pass there."""
    import numpy as np

    state = {"warm": False}

    def run(texts):
        if not state["warm"]:
            state["warm"] = True
            return np.asarray(worker.ask("warm", precision)["logits"], "float32")
        return worker.ask("time", precision)["seconds"]

    return run


# --- systems ------------------------------------------------------------------


def systems(workdir, model, preset=None, threads=THREADS):
    """`{name: (function(texts) -> logits, precision)}` for every exported
    artifact on its runtimes, loaded; `{name: reason}` for those that failed."""
    import numpy as np
    import tensorflow as tf

    from kbert.export.onnx.runner import OnnxRunner
    from kbert.export.openvino.runner import OpenVinoRunner
    from kbert.export.tflite.runner import TFLiteRunner

    preset = preset or os.path.join(workdir, "classifier")
    paths = artifact_paths(workdir)
    tokenizer = _tokenizer(preset, model.preprocessor.sequence_length)
    found, failed = {}, {}

    def logits_of(runner):
        return lambda batch: runner(batch)["logits"]

    def add(name, precision, make):
        try:
            found[name] = (make(), precision)
        except Exception as error:  # an artifact or runtime missing here
            failed[name] = f"{type(error).__name__}: {error}"[:200]

    def onnx_ids(path):
        runner = OnnxRunner(path, num_threads=threads)
        return lambda texts: _sorted_batches(tokenizer, logits_of(runner), texts)

    def text_runner(runner):
        return lambda texts: _text_batches(lambda b: runner({"text": b})["logits"], texts)

    def xml(key):
        return os.path.join(paths[key], "openvino_model.xml")

    # token ids in
    add("onnxruntime float32", "fp32", lambda: onnx_ids(paths["onnx torch"]))
    for quantization, precision in (
        ("float16", "fp16"),
        ("dynamic_int8", "int8"),
        ("int8", "int8"),
    ):
        add(
            f"onnxruntime {quantization}",
            precision,
            lambda q=quantization: onnx_ids(paths[f"onnx {q}"]),
        )

    def openvino_rows(key, label, precisions, wrap):
        """Rows of the IR `key`: at the plugin's default precision for this
        CPU (None), one request at a time and in throughput mode (a request
        per stream in flight), and at each precision in `precisions` forced."""
        if not _exists(paths[key]):
            failed[label] = f"not exported: {paths[key]}"
            return
        for forced, throughput in [(None, True), *((p, False) for p in precisions)]:
            runner = OpenVinoRunner(xml(key), forced, threads, throughput=throughput)
            suffix = f"{forced} forced" if forced else f"{runner.precision}, its default"
            if throughput:
                streams = runner.compiled.get_property("NUM_STREAMS")
                suffix += f", throughput mode: {streams} streams"
            precision = "int8" if "int8" in key else runner.precision.replace("f32", "fp32")
            found[f"{label} ({suffix})"] = (wrap(runner), precision)

    def all_logits(runner):
        return lambda batches: [out["logits"] for out in runner.map(batches)]

    def sorted_ids(runner):
        return lambda texts: _sorted_batches(tokenizer, None, texts, all_logits(runner))

    def text_ir(runner):
        return lambda texts: _text_batches(
            None, texts, lambda bs: all_logits(runner)([{"text": b} for b in bs])
        )

    openvino_rows("openvino token_ids float32", "OpenVINO IR", (None, "f32"), sorted_ids)
    openvino_rows(
        "openvino token_ids int8", "OpenVINO IR int8 (NNCF)", (None, "f32"), sorted_ids
    )
    add(
        "OpenVINO, dynamic_int8 ONNX file (its default)",
        "int8",
        lambda: sorted_ids(OpenVinoRunner(paths["onnx dynamic_int8"], None, threads)),
    )
    for quantization in ("float32", "float16", "dynamic_int8", "int8"):
        precision = {"float32": "fp32", "float16": "fp16"}.get(quantization, "int8")

        def litert(q=quantization):
            runner = TFLiteRunner(paths[f"tflite token_ids_{q}"], num_threads=threads)
            return lambda texts: _one_at_a_time(tokenizer, logits_of(runner), texts)

        add(f"LiteRT token_ids {quantization} (batch 1)", precision, litert)
    # strings in: the tokenizer inside the artifact
    for quantization in ("float32", "dynamic_int8"):
        precision = "fp32" if quantization == "float32" else "int8"
        add(
            f"onnxruntime strings {quantization} (+extensions)",
            precision,
            lambda q=quantization: text_runner(
                OnnxRunner(paths[f"onnx string {q}"], num_threads=threads)
            ),
        )
    openvino_rows("openvino string float32", "OpenVINO IR strings", (None, "f32"), text_ir)
    openvino_rows(
        "openvino string int8", "OpenVINO IR strings int8 (NNCF)", (None,), text_ir
    )
    for quantization in ("float32", "dynamic_int8"):
        precision = "fp32" if quantization == "float32" else "int8"
        add(
            f"LiteRT strings {quantization} (tokenizer inside)",
            precision,
            lambda q=quantization: text_runner(
                TFLiteRunner(paths[f"tflite string_{q}"], num_threads=threads)
            ),
        )

    def saved_model():
        import tensorflow_text  # noqa: F401 - the SavedModel's tokenizer ops

        signature = tf.saved_model.load(paths["saved_model"]).signatures["serving_default"]
        return lambda texts: _text_batches(
            lambda b: signature(text=tf.constant(list(b)))["logits"].numpy(), texts
        )

    add("SavedModel text signature (TensorFlow)", "fp32", saved_model)
    wrapped = {
        name: ((lambda texts, f=f: np.asarray(f(texts))), precision)
        for name, (f, precision) in found.items()
    }
    return wrapped, failed


def review_flops(model, tokens):
    """The useful FLOPs of classifying reviews of `tokens` real tokens each
    (see the module docstring): dense layers, attention products, pooler and head."""
    config = model.backbone.get_config()
    hidden, inner = config["hidden_dim"], config["intermediate_dim"]
    layers = config["num_layers"]
    dense = layers * (4 * hidden * hidden + 2 * hidden * inner)
    head = hidden * hidden + hidden * 2
    return {
        "dense_weights_per_token": dense,
        "flops": float(
            sum(2 * dense * n + 4 * layers * hidden * n * n + 2 * head for n in tokens)
        ),
    }


def throughput(
    workdir,
    rounds,
    preset=None,
    reviews=None,
    threads=THREADS,
    keras_backend="jax",
):
    import numpy as np

    from kbert.data import rotten_tomatoes_split
    from kbert.presets.model_source import load_model

    preset = preset or os.path.join(workdir, "classifier")
    model = load_model(preset)
    texts, labels = rotten_tomatoes_split(seed=0)["test"]
    texts, labels = texts[:reviews], np.asarray(labels)[:reviews]
    tokenizer = _tokenizer(preset, model.preprocessor.sequence_length)
    tokens = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    workers = {
        backend: KerasWorker(
            backend,
            preset,
            len(texts),
            threads,
            os.path.join(workdir, f"keras_{backend}.log"),
        )
        for backend in BACKENDS
    }
    runs, failed = {}, {}
    for backend in sorted(BACKENDS, key=lambda b: b != keras_backend):
        worker = workers[backend]
        failed.update(
            {
                f"Keras predict ({backend}, {p})": e
                for p, e in worker.ready["errors"].items()
            }
        )
        for precision in (p for p in KERAS_PRECISIONS if p in worker.ready["ready"]):
            runs[f"Keras predict ({backend}, {precision})"] = (
                _remote(worker, precision),
                "fp32" if precision == "float32" else "bf16",
            )
    local, local_failed = systems(workdir, model, preset, threads)
    runs.update(local)
    failed.update(local_failed)
    reference = f"Keras predict ({keras_backend}, float32)"
    predictions, seconds = {}, {}
    for name, (run, _) in list(runs.items()):  # warm-up
        try:
            predictions[name] = np.argmax(run(texts), -1)
            seconds[name] = []
        except Exception as error:  # a system that cannot run here
            failed[name] = f"{type(error).__name__}: {error}"[:200]
            del runs[name]
    names = list(runs)
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            result = runs[name][0](texts)
            elapsed = time.perf_counter() - start
            if name.startswith("Keras predict"):  # the pass as its worker timed it
                elapsed = float(result)
            seconds[name].append(elapsed)
    for worker in workers.values():
        worker.close()
    return {
        "reviews": len(texts),
        "tokens": int(sum(tokens)),
        "reference": reference,
        **review_flops(model, tokens),
        "failed": failed,
        "rows": {
            name: {
                "seconds": float(np.median(seconds[name])),
                "all_seconds": seconds[name],
                "precision": runs[name][1],
                "agreement": float(np.mean(predictions[name] == predictions[reference])),
                "accuracy": float(np.mean(predictions[name] == labels)),
            }
            for name in names
        },
    }


def worker(args):
    preset = args.preset or os.path.join(args.workdir, "classifier")
    if args.worker == "finetune":
        result = {"preset": preset, "cached": True}
        if not os.path.isdir(preset):
            result = finetune_demo_classifier(preset, args.train_examples)
    elif args.worker == "export":
        only = set(timed_artifacts()) if args.quick else None
        result = export_all(args.workdir, args.backend, preset, only)
    elif args.worker == "verify":
        result = verify_all(args.workdir, preset)
    elif args.worker == "keras":
        return keras_server(preset, args.reviews, args.threads)
    else:
        result = throughput(
            args.workdir,
            args.rounds,
            preset,
            args.reviews,
            args.threads,
            args.keras_backend,
        )
    print(json.dumps(result))
    return None


# --- driver -------------------------------------------------------------------


def _percent(gflops, peak):
    return f"{100 * gflops / peak['gflops']:.1f}%" if peak else "-"


def report(result, peaks, rounds):
    """Prints the throughput table and names the fastest faithful row."""
    rows = result["rows"]
    reference = result["reference"]
    onnx_base = rows.get("onnxruntime float32", {}).get("seconds")
    keras_base = rows.get(reference, {}).get("seconds")
    table = []
    for name, row in rows.items():
        gflops = result["flops"] / row["seconds"] / 1e9
        own = peaks.get(row["precision"]) if row["precision"] in ("bf16", "int8") else None
        table.append(
            [
                name,
                row["precision"],
                f"{result['reviews'] / row['seconds']:.1f}",
                f"{gflops:.1f}",
                _percent(gflops, peaks.get("fp32")),
                f"{_percent(gflops, own)} of {row['precision']}" if own else "-",
                f"{onnx_base / row['seconds']:.2f}x" if onnx_base else "-",
                f"{keras_base / row['seconds']:.2f}x" if keras_base else "-",
                f"{row['agreement']:.4f}",
                f"{row['accuracy']:.4f}",
            ]
        )
    print(
        f"\n{result['reviews']} held-out reviews ({result['tokens']} real tokens, "
        f"{result['flops'] / 1e9:.2f} GFLOP of useful work), strings -> predicted "
        f"classes, median of {rounds} round(s) (systems in turn); agreement with "
        f"{reference}"
    )
    print_table(
        [
            "system",
            "computes in",
            "reviews/s",
            "GFLOP/s",
            "% of fp32 peak",
            "% of own peak",
            "vs onnxruntime fp32",
            "vs Keras",
            "agreement",
            "accuracy",
        ],
        table,
    )
    print(
        "Work counted on real tokens (padding is lost time). % of own peak: bf16 "
        "rows against the best bf16 matmul, int8 rows against onnxruntime's "
        "MatMulInteger (a lower bound of the CPU's int8 limit: other int8 kernels, "
        "oneDNN's in OpenVINO, can pass it, and int8 rows keep softmax, attention "
        "products and LayerNorm in float); fp16 rows: against fp32 only (no fp16 "
        "peak measured)."
    )
    faithful = {name: row for name, row in rows.items() if row["agreement"] >= 0.99}
    if faithful:
        best = min(faithful, key=lambda name: faithful[name]["seconds"])
        print(
            f"\nFastest with agreement >= 0.99: {best} "
            f"({result['reviews'] / faithful[best]['seconds']:.1f} reviews/s, "
            f"agreement {faithful[best]['agreement']:.4f})"
        )
    for name, reason in result["failed"].items():
        print(f"not timed: {name}: {reason}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=os.path.join("/tmp", "kbert-runtimes"))
    parser.add_argument("--preset", help="a saved demo classifier preset (else trained)")
    parser.add_argument("--rounds", type=int, default=None, help="3 (--quick: 1)")
    parser.add_argument("--reviews", type=int, default=None, help="all (--quick: 128)")
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--train-examples", type=int, default=4000)
    parser.add_argument(
        "--keras-backend",
        default="jax",
        help="backend of the reference Keras predict row (jax, float32)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="128 reviews, 1 round, only the exports timed, no kbert verify table",
    )
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.reviews is None and args.quick:
        args.reviews = QUICK_REVIEWS
    began = time.perf_counter()
    os.makedirs(args.workdir, exist_ok=True)
    script = os.path.abspath(__file__)
    cpus = sorted(os.sched_getaffinity(0))[: args.threads]
    common = ["--workdir", args.workdir, "--train-examples", str(args.train_examples)]
    common += ["--threads", str(args.threads)]
    if args.preset:
        common += ["--preset", os.path.abspath(args.preset)]
    if args.quick:
        common.append("--quick")
    print(f"CPU: {cpu_description()}")
    print(f"every process pinned to cores {cpus} ({args.threads} threads per runtime)")
    limits = matmul_limit.limits(args.threads, cpus)
    peaks = matmul_limit.peaks(limits)
    print(
        f"{matmul_limit.SIZE}x{matmul_limit.SIZE} matmul limit on those cores, "
        "GFLOP/s: " + json.dumps({name: round(value) for name, value in limits.items()})
    )
    for kind, peak in peaks.items():
        if peak:
            print(f"  {kind} peak: {peak['gflops']:.0f} GFLOP/s ({peak['from']})")
        else:
            print(f"  {kind} peak: not measured (rows are given against fp32 only)")
    if not args.skip_export:
        if not args.preset:
            print(run_worker(script, ["--worker", "finetune", *common], "jax"))
        wanted = set(timed_artifacts()) if args.quick else None
        paths = artifact_paths(args.workdir)
        for backend in BACKENDS:
            missing = [
                key
                for key in backend_artifacts(backend)
                if (wanted is None or key in wanted)
                and not _exists(paths[key])
                and key not in refused(args.workdir)
            ]
            if not missing:  # all there: no worker (its start takes a minute)
                continue
            exported = run_worker(
                script, ["--worker", "export", "--backend", backend, *common], backend
            )
            print(f"exported on {backend}: {json.dumps(exported)}")
            now_refused = refused(args.workdir)
            now_refused.update(
                {
                    key: value
                    for key, value in exported.items()
                    if isinstance(value, str) and value.startswith("refused")
                }
            )
            with open(os.path.join(args.workdir, "refused.json"), "w") as file:
                json.dump(now_refused, file, indent=1)
        for key, reason in refused(args.workdir).items():
            print(f"export refused earlier (delete refused.json to retry): {key}: {reason}")
        if not args.quick:
            print(
                run_worker(script, ["--worker", "verify", *common], "tensorflow")["table"]
            )
    timing = ["--worker", "time", "--rounds", str(args.rounds), *common]
    timing += ["--keras-backend", args.keras_backend]
    if args.reviews:
        timing += ["--reviews", str(args.reviews)]
    result = run_worker(script, timing, "tensorflow", cpus=cpus)
    report(result, peaks, args.rounds)
    print(json.dumps({name: row["all_seconds"] for name, row in result["rows"].items()}))
    print(f"\nwhole run: {time.perf_counter() - began:.0f} s")
    return None


if __name__ == "__main__":
    main()
