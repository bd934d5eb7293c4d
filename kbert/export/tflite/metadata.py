"""TFLite model metadata for MediaPipe Tasks and the TFLite Task Library.

MediaPipe's `TextClassifier` and the Task Library's `BertNLClassifier` /
`BertQuestionAnswerer` read a BERT model's tokenizer and labels from
metadata: a `TFLITE_METADATA` flatbuffer (schema `metadata_schema.fbs`,
identifier `M001`) in the model's `metadata` list, naming the inputs `ids`,
`mask`, `segment_ids`, carrying a `BertTokenizerOptions` process unit, and
the associated files (`vocab.txt`, `labels.txt`) zipped after the model.

`tflite-support`'s writer needs protobuf 3.20 (TensorFlow needs newer) and
MediaPipe 1.2's writer lacks its compiled version helper, so this module
writes the flatbuffer with the generated schema module that the `mediapipe`
wheel ships (it needs only `flatbuffers`), loaded by path without importing
MediaPipe itself.
"""

import functools
import importlib.util
import os

from kbert.export.tflite.flatbuffer import metadata_entries, with_metadata

METADATA_NAME = "TFLITE_METADATA"
MIN_PARSER_VERSION = "1.1.0"  # BertTokenizerOptions' version in the schema
INPUT_DESCRIPTIONS = {
    "ids": "Tokenized ids of the input text.",
    "mask": "Mask with 1 for real tokens and 0 for padding tokens.",
    "segment_ids": "0 for the first sequence, 1 for the second sequence if exists.",
}


@functools.lru_cache(maxsize=1)
def metadata_schema():
    """The `metadata_schema_py_generated` module of the mediapipe wheel.

    Example:
    >>> metadata_schema().ModelMetadataT
    <class 'kbert_metadata_schema.ModelMetadataT'>
    """
    spec = importlib.util.find_spec("mediapipe")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            'flavour="mediapipe" writes MediaPipe metadata with the schema the '
            "mediapipe wheel ships: pip install mediapipe."
        )
    path = os.path.join(
        spec.submodule_search_locations[0],
        "tasks",
        "metadata",
        "metadata_schema_py_generated.py",
    )
    module_spec = importlib.util.spec_from_file_location("kbert_metadata_schema", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _tensor(schema, name, description, associated_files=None):
    tensor = schema.TensorMetadataT()
    tensor.name = name
    tensor.description = description
    tensor.content = schema.ContentT()
    tensor.content.contentPropertiesType = schema.ContentProperties.FeatureProperties
    tensor.content.contentProperties = schema.FeaturePropertiesT()
    tensor.associatedFiles = associated_files
    return tensor


def _file(schema, name, description, kind):
    file = schema.AssociatedFileT()
    file.name = name
    file.description = description
    file.type = kind
    return file


def bert_metadata(
    input_names, output_names, name, description, labels=None, vocab_file="vocab.txt"
):
    """The `M001` metadata flatbuffer of a BERT model (bytes).

    Args:
        input_names: the model's inputs in subgraph order, each one of `ids`,
            `mask`, `segment_ids`.
        output_names: the model's outputs in subgraph order; the one named
            `probability` gets the label file.
        labels: class names (classifiers), written as `labels.txt`.

    Example:
    >>> bert_metadata(["ids", "segment_ids", "mask"], ["probability"], "kbert",
    ...               "A classifier.", labels=["rotten", "fresh"])[4:8]
    b'M001'
    """
    import flatbuffers  # lazy: TFLite libraries only for TFLite files

    schema = metadata_schema()
    tokenizer = schema.ProcessUnitT()
    tokenizer.optionsType = schema.ProcessUnitOptions.BertTokenizerOptions
    tokenizer.options = schema.BertTokenizerOptionsT()
    tokenizer.options.vocabFile = [
        _file(
            schema,
            vocab_file,
            "Vocabulary file for the BertTokenizer.",
            schema.AssociatedFileType.VOCABULARY,
        )
    ]
    subgraph = schema.SubGraphMetadataT()
    subgraph.inputTensorMetadata = [
        _tensor(schema, n, INPUT_DESCRIPTIONS[n]) for n in input_names
    ]
    subgraph.inputProcessUnits = [tokenizer]
    outputs = []
    for output in output_names:
        files = None
        if output == "probability" and labels:
            files = [
                _file(
                    schema,
                    "labels.txt",
                    "Labels for the categories the model can classify.",
                    schema.AssociatedFileType.TENSOR_AXIS_LABELS,
                )
            ]
        outputs.append(_tensor(schema, output, f"The model's {output}.", files))
    subgraph.outputTensorMetadata = outputs
    model_metadata = schema.ModelMetadataT()
    model_metadata.name = name
    model_metadata.description = description
    model_metadata.version = "1"
    model_metadata.author = "kbert"
    model_metadata.subgraphMetadata = [subgraph]
    model_metadata.minParserVersion = MIN_PARSER_VERSION
    builder = flatbuffers.Builder(1024)
    builder.Finish(model_metadata.Pack(builder), file_identifier=b"M001")
    return bytes(builder.Output())


def populate(model_bytes, metadata, files):
    """The model with `metadata` as `TFLITE_METADATA` and `files` zipped after.

    `files` maps associated file names to their bytes.

    Example:
    >>> metadata = bert_metadata(["ids", "mask", "segment_ids"], ["probability"], "kbert",
    ...                          "A classifier.")
    >>> with open(tflite_file, "rb") as file:
    ...     model_bytes = populate(file.read(), metadata, {"vocab.txt": b"[PAD]"})
    >>> read_metadata(model_bytes).name
    b'kbert'
    """
    return with_metadata(model_bytes, METADATA_NAME, metadata, files)


def read_metadata(model_bytes):
    """The `ModelMetadataT` of a TFLite model, or None when it has none.

    Example:
    >>> with open(tflite_file, "rb") as file:  # a token-id file: no MediaPipe metadata
    ...     read_metadata(file.read()) is None
    True
    """
    data = metadata_entries(model_bytes).get(METADATA_NAME)
    if data is None:
        return None
    schema = metadata_schema()
    return schema.ModelMetadataT.InitFromObj(
        schema.ModelMetadata.GetRootAsModelMetadata(data, 0)
    )
