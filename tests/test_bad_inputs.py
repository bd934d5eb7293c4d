"""Bad inputs get a clear `ValueError` naming the problem, before Keras sees them."""

import keras
import numpy as np
import pytest

import kbert
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.preprocessing.tokenizer import BertTokenizer
from tests.test_case import tiny_backbone, token_inputs

pytestmark = pytest.mark.eager_on_tensorflow  # tests/conftest.py

VOCABULARY_SIZE = 64  # tiny_backbone's

# (input name, bad value, message fragment naming the table)
OUT_OF_RANGE = [
    ("token_ids", VOCABULARY_SIZE, "vocabulary_size=64"),
    ("token_ids", -1, "vocabulary_size=64"),
    ("segment_ids", 2, "num_segments=2"),
    ("segment_ids", -3, "num_segments=2"),
]


def bad_inputs(name, value, row=1, token=4):
    inputs = token_inputs(batch=3, length=10)
    inputs["padding_mask"][:] = 1
    inputs[name][row, token] = value
    return inputs


def assert_names(error, name, value, position="row 1, token 4", entry=""):
    message = f"{entry}: {error.value}"
    assert f"'{name}'" in message, message
    assert f"id {value} " in message, message
    assert position in message, message


@pytest.mark.parametrize("name, value, table", OUT_OF_RANGE)
def test_backbone_call_refuses_out_of_range_ids(name, value, table):
    backbone = tiny_backbone()
    inputs = bad_inputs(name, value)
    with pytest.raises(ValueError, match=table) as error:
        backbone(inputs)
    assert_names(error, name, value)
    # Concrete backend tensors are checked as NumPy arrays are.
    tensors = {k: keras.ops.convert_to_tensor(v) for k, v in inputs.items()}
    with pytest.raises(ValueError, match=table):
        backbone(tensors)
    with pytest.raises(ValueError, match=table) as error:
        backbone.predict(inputs, verbose=0)
    assert_names(error, name, value)
    # Good ids still run.
    good = token_inputs(batch=3, length=10)
    assert backbone(good)["sequence_output"].shape == (3, 10, 16)


@pytest.mark.parametrize("name", ["token_ids", "segment_ids"])
def test_float_ids_are_refused_not_truncated(name):
    backbone = tiny_backbone()
    inputs = token_inputs(batch=2, length=6)
    inputs[name] = inputs[name].astype("float32") + 0.5
    for run in (backbone, lambda x: backbone.predict(x, verbose=0)):
        with pytest.raises(ValueError, match=f"'{name}'.*float32"):
            run(inputs)


@pytest.mark.parametrize("name, value, table", OUT_OF_RANGE[::3])
def test_task_entry_points_refuse_out_of_range_ids(name, value, table):
    model = kbert.BertClassifier(tiny_backbone(), num_classes=2)
    inputs = bad_inputs(name, value)
    y = np.array([0, 1, 0])
    calls = {
        "__call__": lambda: model(inputs),
        "predict": lambda: model.predict(inputs, verbose=0),
        "evaluate": lambda: model.evaluate(inputs, y, verbose=0),
        "fit": lambda: model.fit(inputs, y, epochs=1, verbose=0),
        "fit validation_data": lambda: model.fit(
            token_inputs(batch=3, length=10), y, validation_data=(inputs, y), verbose=0
        ),
        "predict_features": lambda: model.predict_features(inputs),
    }
    for entry, call in calls.items():
        with pytest.raises(ValueError, match=table) as error:
            call()
        assert_names(error, name, value, entry=entry)
    # After every refusal the model still predicts (no broken state on JAX).
    logits = model.predict(token_inputs(batch=3, length=10), verbose=0)
    assert logits.shape == (3, 2) and np.isfinite(logits).all()


def test_multiple_choice_position_names_every_axis():
    model = kbert.BertMultipleChoice(tiny_backbone(), num_choices=2)
    inputs = token_inputs(batch=2, length=6, extra_dims=(2,))
    inputs["padding_mask"][:] = 1
    inputs["token_ids"][1, 0, 3] = 99
    with pytest.raises(ValueError, match="vocabulary_size") as error:
        model.predict(inputs, verbose=0)
    assert_names(error, "token_ids", 99, position="row 1, index 0, token 3")


def test_raw_text_with_a_larger_preprocessor_vocabulary_is_refused():
    # A preprocessor whose vocabulary outgrows the backbone's embedding table.
    words = [f"w{i}" for i in range(70)]
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    preprocessor = BertPreprocessor(BertTokenizer(vocabulary), sequence_length=8)
    model = kbert.BertClassifier(tiny_backbone(), num_classes=2, preprocessor=preprocessor)
    assert model.predict(["w1 w2"], verbose=0).shape == (1, 2)
    with pytest.raises(
        ValueError, match="'token_ids' holds id 74 at position \\(row 1, token 1\\)"
    ):
        model.predict(["w1 w2", "w69"], verbose=0)


# === Token-id shapes: no rows, no tokens, wrong rank, text, None ===


def zero_rows(extra_dims=()):
    return {k: v[:0] for k, v in token_inputs(batch=2, extra_dims=extra_dims).items()}


TASKS = {
    "BertBackbone": None,
    "BertClassifier": {"num_classes": 2},
    "BertTextEmbedder": {},
    "BertFeatureExtractor": {"layers": [-1]},
    "BertQuestionAnswerer": {},
    "BertTokenClassifier": {"num_classes": 3},
    "BertMultipleChoice": {"num_choices": 2},
}


@pytest.mark.parametrize("name", list(TASKS))
def test_predict_refuses_zero_rows_by_name(name):
    # Keras' predict loop failed: UnboundLocalError: batch_outputs.
    backbone = tiny_backbone()
    model = (
        backbone if TASKS[name] is None else getattr(kbert, name)(backbone, **TASKS[name])
    )
    x = zero_rows((2,) if name == "BertMultipleChoice" else ())
    with pytest.raises(ValueError, match=f"{name}.predict got no examples: 'token_ids'"):
        model.predict(x, verbose=0)


BAD_IDS = {
    # (token_ids, message fragment)
    "no tokens": (
        np.zeros((1, 0), "int32"),
        "shape (1, 0): no tokens; each row takes 1 to 24",
    ),
    "rank 1": (
        np.array([2, 5, 3], "int32"),
        "shape (3,); it takes shape (batch, sequence_length)",
    ),
    "strings": (np.array([["a", "b"]]), "holds <U1 values; ids are integers"),
    "None": (
        None,
        "'token_ids' is None; it takes integer ids of shape (batch, sequence_length)",
    ),
    "too long": (
        np.ones((1, 25), "int32"),
        "sequence length 25, longer than max_sequence_length=24",
    ),
}


@pytest.mark.parametrize("case", list(BAD_IDS))
def test_bad_token_ids_are_named(case):
    token_ids, fragment = BAD_IDS[case]
    backbone = tiny_backbone()
    model = kbert.BertClassifier(backbone, num_classes=2)
    full = {name: token_ids for name in ("token_ids", "segment_ids", "padding_mask")}
    calls = {
        "backbone call": lambda: backbone({"token_ids": token_ids}),
        "backbone predict": lambda: backbone.predict({"token_ids": token_ids}, verbose=0),
        "task call": lambda: model(full),
        "task predict": lambda: model.predict(full, verbose=0),
    }
    for entry, call in calls.items():
        with pytest.raises(ValueError) as error:
            call()
        message = str(error.value)
        assert fragment in message and "Input 'token_ids'" in message, f"{entry}: {message}"
        assert "\n" not in message, f"{entry}: {message}"  # not Keras' wrapped error
    assert model.predict(token_inputs(), verbose=0).shape == (3, 2)


def test_multiple_choice_names_its_id_shape():
    model = kbert.BertMultipleChoice(tiny_backbone(), num_choices=2)
    with pytest.raises(ValueError, match="it takes shape \\(batch, num_choices, sequence"):
        model.predict(token_inputs(), verbose=0)


# === The sweep: every public entry point, one bad input each ===
# Each case: the call, the error type and a fragment of the message that
# names the problem (input, value, position, file).

GOOD_TEXTS = ["a good film", "not very fun", "the plot was boring but the acting great"]
QA_GOOD = (["what was it?", "who?"], ["it was a film", "his story"])
MC_GOOD = (["the film", "a plot"], [["was good", "was bad"], ["is fun", "is not"]])


@pytest.fixture(scope="module")
def models():
    """Tiny models with a real preprocessor, and each one's good outputs."""
    from tests.export.export_helpers import tiny_model

    built = {
        "classifier": tiny_model(num_classes=2),
        "embedder": tiny_model("BertTextEmbedder"),
        "features": tiny_model("BertFeatureExtractor", layers=[-1]),
        "qa": tiny_model("BertQuestionAnswerer"),
        "ner": tiny_model("BertTokenClassifier", num_classes=3),
        "mc": tiny_model("BertMultipleChoice", num_choices=2),
    }
    good = {"qa": QA_GOOD, "mc": MC_GOOD}
    inputs = {name: good.get(name, GOOD_TEXTS) for name in built}
    reference = {
        name: model.predict(inputs[name], verbose=0) for name, model in built.items()
    }
    return built, inputs, reference


RAW_TEXT_CASES = {
    "predict None": ("classifier", lambda m: m.predict(["a", None]), "inputs[1] is None"),
    "predict int": ("classifier", lambda m: m.predict(["a", 3]), "inputs[1] is int 3"),
    "predict None alone": ("classifier", lambda m: m.predict(None), "received NoneType"),
    "predict nested": ("classifier", lambda m: m.predict([["a"]]), "nested lists"),
    "predict bad UTF-8": ("classifier", lambda m: m.predict([b"\xff"]), "not valid UTF-8"),
    "predict pair None": (
        "classifier",
        lambda m: m.predict((["a", "b"], ["c", None])),
        "segment 1[1] is None",
    ),
    "fit None": ("classifier", lambda m: m.fit(["a", None], [0, 1]), "inputs[1] is None"),
    "evaluate float": (
        "classifier",
        lambda m: m.evaluate(["a", 1.5], [0, 1]),
        "inputs[1] is float 1.5",
    ),
    "embedder None": ("embedder", lambda m: m.predict(["a", None]), "inputs[1] is None"),
    "feature extractor int": ("features", lambda m: m.predict([7]), "inputs[0] is int 7"),
    "answer None question": (
        "qa",
        lambda m: m.answer(["who?", None], ["c", "c"]),
        "questions[1] is None",
    ),
    "answer int context": ("qa", lambda m: m.answer(["who?"], [3]), "contexts[0] is int 3"),
    "QA predict None": (
        "qa",
        lambda m: m.predict((["who?"], [None])),
        "contexts[0] is None",
    ),
    "predict_words None": (
        "ner",
        lambda m: m.predict_words(["a b", None]),
        "Example 1 is NoneType",
    ),
    "predict_words int word": (
        "ner",
        lambda m: m.predict_words([["a", 3]]),
        "Example 0, word 1 is int 3",
    ),
    "NER predict None": ("ner", lambda m: m.predict(["a", None]), "Example 1 is NoneType"),
    "choices None prompt": (
        "mc",
        lambda m: m.predict((["p", None], [["a", "b"], ["c", "d"]])),
        "prompts[1] is None",
    ),
    "choices None choice": (
        "mc",
        lambda m: m.predict((["p"], [["a", None]])),
        "choices[0][1] is None",
    ),
    "choices too many": (
        "mc",
        lambda m: m.predict((["p"], [["a", "b", "c"]])),
        "choices[0] holds 3 texts",
    ),
    "preprocessor None": (
        "classifier",
        lambda m: m.preprocessor(["a", None]),
        "inputs[1] is None",
    ),
    "tokenizer float": (
        "classifier",
        lambda m: m.preprocessor.tokenizer([1.5]),
        "inputs[0] is float 1.5",
    ),
}


@pytest.mark.parametrize("case", list(RAW_TEXT_CASES))
def test_raw_text_entry_points_name_the_bad_item(models, case):
    built, inputs, reference = models
    name, call, fragment = RAW_TEXT_CASES[case]
    model = built[name]
    with pytest.raises(ValueError) as error:
        call(model)
    assert fragment in str(error.value), str(error.value)
    # The model still works and gives what it gave before (JAX included).
    again = model.predict(inputs[name], verbose=0)
    keras.tree.map_structure(
        lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6), again, reference[name]
    )


def test_bytes_are_utf8_text(models):
    built, _, reference = models
    as_bytes = [text.encode("utf-8") for text in GOOD_TEXTS]
    got = built["classifier"].predict(as_bytes, verbose=0)
    np.testing.assert_allclose(got, reference["classifier"], atol=1e-6)


@pytest.mark.parametrize("batch_size", [0, -2, 1.5])
def test_predict_refuses_a_batch_size_below_one(models, batch_size):
    # 0 was silently replaced by the default batch size.
    with pytest.raises(ValueError, match=f"batch_size={batch_size}: predict takes"):
        models[0]["classifier"].predict(GOOD_TEXTS, batch_size=batch_size, verbose=0)


@pytest.mark.parametrize("entry", ["classifier predict", "call"])
def test_missing_inputs_are_named(entry):
    backbone = tiny_backbone()
    model = kbert.BertClassifier(backbone, num_classes=2)
    inputs = {"token_ids": token_inputs()["token_ids"]}
    calls = {
        "classifier predict": lambda: model.predict(inputs, verbose=0),
        "call": lambda: model(inputs),
    }
    # predict: ours; __call__: Keras' own message, which names the input too.
    with pytest.raises(
        ValueError, match="Missing (inputs 'segment_ids', |data for input )"
    ):
        calls[entry]()
    assert model.predict(token_inputs(), verbose=0).shape == (3, 2)


def test_the_backbone_fills_in_segment_ids_and_padding_mask():
    backbone = tiny_backbone()
    full = token_inputs()
    full["segment_ids"][:] = 0
    full["padding_mask"][:] = 1
    want = backbone.predict(full, verbose=0)["sequence_output"]
    got = backbone.predict({"token_ids": full["token_ids"]}, verbose=0)["sequence_output"]
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_a_failure_inside_keras_leaves_the_model_usable():
    # Labels of the wrong shape fail inside Keras' train step; on JAX that
    # used to leave every variable detached ('NoneType' object is not callable).
    model = kbert.BertClassifier(tiny_backbone(), num_classes=2)
    want = model.predict(token_inputs(), verbose=0)
    with pytest.raises(Exception):  # noqa: B017 - Keras' own error, not ours
        model.fit(token_inputs(), np.zeros((3, 7, 5)), epochs=1, verbose=0)
    with pytest.raises(Exception):  # noqa: B017
        model.evaluate(token_inputs(), np.zeros((3, 7, 5)), verbose=0)
    np.testing.assert_allclose(model.predict(token_inputs(), verbose=0), want, atol=1e-6)


# === Presets ===


@pytest.mark.parametrize(
    "contents, fragment",
    [
        (None, "is neither a directory, a registered name"),
        ({}, "holds no checkpoint kbert knows"),
        ({"config.json": "{not json"}, "config.json is not valid JSON"),
        ({"config.json": "{}"}, "the config is empty"),
        ({"config.json": '{"vocab_size": 64}'}, "num_hidden_layers"),
    ],
    ids=["missing", "empty directory", "bad JSON", "empty config", "config missing keys"],
)
def test_from_preset_bad_sources(tmp_path, contents, fragment):
    directory = tmp_path / "preset"
    if contents is not None:
        directory.mkdir()
        for name, text in contents.items():
            (directory / name).write_text(text)
    with pytest.raises(ValueError, match=fragment):
        kbert.BertBackbone.from_preset(str(directory))


@pytest.mark.parametrize("name", ["task.weights.npz", "backbone.weights.h5"])
@pytest.mark.parametrize("keep", [0.5, 0])
def test_from_preset_names_a_truncated_weights_file(tmp_path, name, keep):
    # Was BadZipFile / EOFError / h5py's OSError, naming no file.
    directory = tmp_path / "preset"
    kbert.BertClassifier(tiny_backbone(), num_classes=2).save_to_preset(str(directory))
    path = directory / name
    with open(path, "r+b") as file:
        file.truncate(int(path.stat().st_size * keep))
    with pytest.raises(ValueError) as error:
        kbert.BertClassifier.from_preset(str(directory))
    message = str(error.value)
    assert f"{path}: not a readable weights file" in message and "\n" not in message
    assert isinstance(error.value, OSError)  # still an OSError for those who catch one


# === Writes that run out of disk ===


def test_a_write_over_the_file_size_limit_names_the_file(tmp_path):
    # RLIMIT_FSIZE in a child process: the kernel refuses writes past it (EFBIG).
    import subprocess
    import sys

    script = f"""
import resource
from kbert.utils.atomic import atomic_file
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
try:
    with atomic_file({str(tmp_path / "big.bin")!r}) as tmp, open(tmp, "wb") as file:
        file.write(b"x" * 100_000)
except ValueError as error:
    print(error)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert (
        result.stdout.strip() == f"{tmp_path / 'big.bin'} was not written: File too large."
    ), result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []  # no half-written file, no temporary


def test_save_to_preset_out_of_disk_names_the_preset_and_leaves_nothing(
    tmp_path, monkeypatch
):
    import errno

    def full_disk(path, **arrays):
        with open(path, "wb") as file:
            file.write(b"PK half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full_disk)
    directory = tmp_path / "preset"
    model = kbert.BertClassifier(tiny_backbone(), num_classes=2)
    with pytest.raises(ValueError) as error:
        model.save_to_preset(str(directory))
    assert str(error.value) == f"{directory} was not written: No space left on device."
    assert list(tmp_path.iterdir()) == []


# === Exporters ===


def big_vocabulary_model():
    """A classifier whose preprocessor's ids outgrow its embedding table."""
    from tests.export.export_helpers import preprocessor, vocabulary

    assert len(vocabulary()) > VOCABULARY_SIZE
    return kbert.BertClassifier(tiny_backbone(), num_classes=2, preprocessor=preprocessor())


@pytest.mark.parametrize(
    "exporter, options, fragment",
    [
        ("onnx", {"quantization": "int4"}, "quantization must be one of"),
        ("onnx", {"opset": 9}, "opset must be >="),
        ("tflite", {"flavour": "bogus"}, "flavour must be one of"),
        ("tflite", {"quantization": "int4"}, "quantization must be one of"),
        (
            "tflite",
            {"representative_texts": ["a", None]},
            "representative_texts[1] is None",
        ),
    ],
    ids=[
        "onnx quantization",
        "onnx opset",
        "tflite flavour",
        "tflite quantization",
        "texts",
    ],
)
def test_exporters_refuse_bad_arguments(models, tmp_path, exporter, options, fragment):
    from kbert import export

    path = tmp_path / f"model.{exporter}"
    with pytest.raises(ValueError) as error:
        getattr(export, exporter)(models[0]["classifier"], str(path), **options)
    assert fragment in str(error.value), str(error.value)
    assert not path.exists()


def test_exporter_verification_refuses_out_of_range_ids(tmp_path):
    from kbert import export
    from kbert.export.agreement import agreement_features, measure_agreement
    from kbert.export.measurements import evaluation_data
    from kbert.export.spec import export_spec
    from kbert.export.verification_data import verification_data

    model = big_vocabulary_model()
    spec = export_spec(model)
    fragment = (
        "'token_ids' holds id .* at position \\(row .*, token .*\\), outside \\[0, 64\\)"
    )
    path = tmp_path / "model.onnx"
    with pytest.raises(ValueError, match="The verification sentences.*" + fragment):
        export.onnx(model, str(path))
    assert not path.exists() and not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="verification sentences.*" + fragment):
        verification_data(model, spec, count=4)
    with pytest.raises(ValueError, match="agreement texts.*" + fragment):
        agreement_features(model, spec, 4)
    with pytest.raises(ValueError, match="evaluation texts.*" + fragment):
        evaluation_data(model, spec, 4)  # what `kbert verify` runs
    # Caller-given token inputs, as `measure_agreement` takes them.
    features = bad_inputs("token_ids", 70, row=2, token=3)
    with pytest.raises(ValueError, match="agreement inputs: Input 'token_ids' holds id 70"):
        measure_agreement(model, spec, lambda batch, rows: (batch, batch), features)


def test_onnx_calibration_texts_are_checked(models):
    from kbert.export.onnx.quantization import calibration_feeds
    from kbert.export.spec import export_spec

    model = models[0]["classifier"]
    with pytest.raises(ValueError, match="calibration texts\\[1\\] is int 3"):
        calibration_feeds(model, export_spec(model), texts=["a film", 3])


# === The command line ===


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["export", "{dir}/nope", "--format", "onnx", "-o", "{dir}/m.onnx"], "nope"),
        (["verify", "{dir}/model.txt"], "model.txt: no such file"),
        (["embed", "{dir}/missing.txt", "{dir}/out.npy"], "missing.txt: no such file"),
        (["convert", "{dir}/nope", "{dir}/out"], "neither a directory"),
        (["finetune", "{dir}/missing.csv"], "missing.csv: no such file"),
    ],
    ids=["export", "verify", "embed", "convert", "finetune"],
)
def test_cli_bad_arguments_exit_1_with_the_reason(tmp_path, capsys, argv, fragment):
    from kbert.cli import main

    argv = [arg.format(dir=tmp_path) for arg in argv]
    assert main(argv) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"kbert {argv[0]}: error: ") and fragment in error, error
    assert "Traceback" not in error


def test_cli_unknown_choice_is_an_argparse_error(capsys):
    from kbert.cli import main

    with pytest.raises(SystemExit) as exit_status:
        main(["export", "m", "--format", "bogus", "-o", "m.x"])
    assert exit_status.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
