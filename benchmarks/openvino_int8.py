"""The demo classifier's server-CPU artifacts, timed against onnxruntime fp32.

The model is the demo's (all-MiniLM-L6-v2 fine-tuned on Rotten Tomatoes as
`examples/demo.py` does; `--preset` reuses a saved one, e.g. the tests'
`.test-cache/demo_classifier-*`). kbert exports it four ways: float32 ONNX,
`dynamic_int8` ONNX, an OpenVINO IR and an int8 OpenVINO IR (NNCF). Each
system classifies the 1,281 held-out test reviews:

- agreement: same argmax as kbert's Keras `model.predict(texts, batch_size=32)`;
- throughput: length-sorted batches of 32 padded to the batch's longest
  review (tokenized once beforehand), 2 threads per runtime (onnxruntime
  without spinning). Every batch runs on every system in turn (rotating
  order), `--rounds` times; a system's time is the sum over batches of its
  median; speed is onnxruntime fp32's time over the system's.

    python benchmarks/openvino_int8.py --preset .test-cache/demo_classifier-...
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import finetune_demo_classifier, print_table  # noqa: E402
from end_to_end import cpu_description  # noqa: E402
from onnx_quantization import THREADS, sessions_for  # noqa: E402

BATCH = 32


def export_all(model, preset, workdir):
    """`{name: path}` of the four artifacts (each verified by its exporter)."""
    import kbert.export as export

    paths = {
        "onnx float32": os.path.join(workdir, "float32.onnx"),
        "onnx dynamic_int8": os.path.join(workdir, "dynamic_int8.onnx"),
        "openvino": os.path.join(workdir, "openvino"),
        "openvino int8": os.path.join(workdir, "openvino_int8"),
    }
    seconds = {}
    for name, path in paths.items():
        start = time.perf_counter()
        if name.startswith("onnx"):
            quantization = name.split()[1] if name.endswith("int8") else None
            export.onnx(
                model, path, source=preset, quantization=quantization, overwrite=True
            )
        else:
            quantization = "int8" if name.endswith("int8") else None
            export.openvino(
                model, path, source=preset, quantization=quantization, overwrite=True
            )
        seconds[name] = round(time.perf_counter() - start, 1)
    return paths, seconds


def runners(paths):
    """`{system: callable(batch) -> logits}`: every artifact on its runtimes."""
    from kbert.export.openvino.runner import OpenVinoRunner

    onnx = ("onnx float32", "onnx dynamic_int8")
    systems = {}
    for name, session in sessions_for({name: paths[name] for name in onnx}).items():
        systems[f"{name} on onnxruntime"] = lambda batch, session=session: session.run(
            ["logits"], batch
        )[0]
    for name in ("openvino", "openvino int8"):
        xml = os.path.join(paths[name], "openvino_model.xml")
        for precision in ("f32", None):  # forced float32; the plugin's choice
            runner = OpenVinoRunner(xml, precision=precision, num_threads=THREADS)
            label = f"{name} on OpenVINO ({runner.precision})"
            systems[label] = lambda batch, runner=runner: runner(batch)["logits"]
    return systems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=os.path.join("/tmp", "kbert-openvino-int8"))
    parser.add_argument("--preset", help="a saved demo classifier preset (else trained)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import numpy as np

    from kbert.data import rotten_tomatoes_split
    from kbert.export.agreement import length_batches
    from kbert.export.spec import export_spec
    from kbert.presets.model_source import load_model

    os.makedirs(args.workdir, exist_ok=True)
    preset = args.preset or os.path.join(args.workdir, "classifier")
    if not args.preset and not os.path.exists(preset):
        print(json.dumps(finetune_demo_classifier(preset)))
    model = load_model(preset)
    paths, export_seconds = export_all(model, preset, args.workdir)
    texts, _ = rotten_tomatoes_split(seed=0)["test"]
    reference = np.argmax(model.predict(texts, batch_size=BATCH, verbose=0), -1)
    spec = export_spec(model)
    features = {
        k: np.asarray(v)
        for k, v in model.preprocessor(texts).items()
        if k in spec.token_inputs
    }
    batches = list(length_batches(features, BATCH))
    systems = runners(paths)
    names = list(systems)
    agreement = {}
    for name, run in systems.items():
        predicted = np.zeros(len(texts), "int64")
        for rows, batch in batches:
            predicted[rows] = np.argmax(run(batch), -1)
        agreement[name] = float(np.mean(predicted == reference))
    seconds = {name: np.zeros((args.rounds, len(batches))) for name in names}
    for round_ in range(args.rounds):
        for number, (_, batch) in enumerate(batches):
            shift = (number + round_) % len(names)
            for name in names[shift:] + names[:shift]:
                start = time.perf_counter()
                systems[name](batch)
                seconds[name][round_, number] = time.perf_counter() - start
    total = {name: float(np.median(seconds[name], axis=0).sum()) for name in names}
    base = total["onnx float32 on onnxruntime"]
    print(f"CPU: {cpu_description()}")
    print(
        f"{len(texts)} held-out reviews, batches of {BATCH} padded per batch, "
        f"{THREADS} threads, {args.rounds} rounds (medians per batch)"
    )
    print_table(
        ["system", "seconds", "speed vs onnxruntime fp32", "agreement with Keras"],
        [
            [
                name,
                f"{total[name]:.2f}",
                f"{base / total[name]:.2f}x",
                f"{agreement[name]:.4f}",
            ]
            for name in names
        ],
    )
    print("export seconds: " + json.dumps(export_seconds))


if __name__ == "__main__":
    main()
