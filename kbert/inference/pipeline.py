"""`kbert.pipeline(task, model)`: predictions people read, in one line.

Named as Hugging Face's `transformers.pipeline` names them, and returning
what it returns (labels and probabilities, entity spans, answers, top-k
tokens, vectors), computed by the task models' own batched, length-bucketed
raw-text paths (`Task.predict_features`, `BertQuestionAnswerer.answer`).
"""

import dataclasses

import keras
import numpy as np

from kbert.inference.wordpiece_text import pieces_to_text
from kbert.models import windows as windows_lib
from kbert.models.backbone import INPUT_NAMES, BertBackbone
from kbert.models.classifier import BertClassifier
from kbert.models.feature_extractor import BertFeatureExtractor
from kbert.models.masked_lm import BertMaskedLM
from kbert.models.pretrainer import BertPretrainer
from kbert.models.question_answerer import BertQuestionAnswerer
from kbert.models.text_embedder import BertTextEmbedder
from kbert.models.token_classifier import BertTokenClassifier
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.presets.formats import load_preprocessor
from kbert.sources import resolve_source

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")


def _numpy(features):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, features)


def _texts(inputs, what):
    """`(list of texts, whether one text was given)`."""
    if isinstance(inputs, str):
        return [inputs], True
    texts = list(inputs)
    bad = [i for i, text in enumerate(texts) if not isinstance(text, str)]
    if bad:
        raise ValueError(
            f"{what} takes a string or a list of strings; input {bad[0]} is "
            f"{type(texts[bad[0]]).__name__}."
        )
    return texts, False


def _require_preprocessor(model, what):
    if getattr(model, "preprocessor", None) is None:
        raise ValueError(
            f"The {what} pipeline needs a model with a preprocessor: load it with "
            "from_preset, or pass `preprocessor=` when building it."
        )
    return model.preprocessor


def _features(preprocessor, texts):
    return _numpy(preprocessor(texts))


class _LongTexts:
    """What the text pipelines share: how they read texts over the sequence
    length (`long_texts`, `stride`: see `kbert.models.task.Task`)."""

    def __init__(self, model, long_texts="truncate", stride=None):
        self.model = model
        self.long_texts = long_texts
        self.stride = model._window_stride(long_texts, stride)

    def _predict(self, texts, batch_size):
        return self.model.predict(
            texts,
            batch_size=batch_size,
            verbose=0,
            long_texts=self.long_texts,
            stride=self.stride,
        )


class TextClassificationPipeline(_LongTexts):
    """Labels and scores of a `BertClassifier`, as HF's text-classification.

    Scores are softmax probabilities (single-label), sigmoids (multi-label
    or one class) or the raw outputs (regression); labels come from
    `id2label` (`LABEL_{i}` without it).

    Example:
    >>> classify = kbert.pipeline("text-classification", classifier)
    >>> sorted(classify("What a film!"))
    ['label', 'score']
    >>> [len(row) for row in classify(["Fine.", "Bad."], top_k=None)]
    [2, 2]
    """

    def __init__(self, model, **long_texts):
        _require_preprocessor(model, "text-classification")
        super().__init__(model, **long_texts)

    def scores(self, logits):
        model = self.model
        if model.problem_type == "regression":
            return logits
        if model.problem_type == "multi_label" or model.num_classes == 1:
            return 1.0 / (1.0 + np.exp(-logits))
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True)

    def __call__(self, inputs, top_k=1, batch_size=None):
        """One `{label, score}` per text (`top_k=1`), else its `top_k` best
        (`None`: all labels), best first."""
        texts, single = _texts(inputs, "text-classification")
        scores = self.scores(self._predict(texts, batch_size))
        id2label = self.model.id2label or {}
        results = []
        for row in scores:
            order = np.argsort(-row, kind="stable")[:top_k]
            ranked = [
                {"label": id2label.get(int(i), f"LABEL_{i}"), "score": float(row[i])}
                for i in order
            ]
            results.append(ranked[0] if top_k == 1 else ranked)
        return results[0] if single else results


def _bio_tag(label):
    """`(B or I, tag)` as HF's aggregation reads a label (`O` is its own tag)."""
    if label.startswith(("B-", "I-")):
        return label[0], label[2:]
    return "I", label


class TokenClassificationPipeline(_LongTexts):
    """Entity spans of a `BertTokenClassifier`, as HF's token-classification
    with `aggregation_strategy="simple"`: each piece takes its most likely
    label; consecutive pieces of one tag (a `B-` starts a new one) form an
    entity whose score is their mean probability. `start`/`end` are
    character offsets into the text; `word` is the entity's pieces decoded
    (lower-cased by an uncased tokenizer, as in HF).

    Example:
    >>> tagger = kbert.BertTokenClassifier(backbone, num_classes=3,
    ...     preprocessor=preprocessor, id2label={0: "O", 1: "B-PER", 2: "I-PER"})
    >>> tag = kbert.pipeline("token-classification", tagger)
    >>> spans = tag("Ada Lovelace wrote")
    >>> all({"entity_group", "score", "word", "start", "end"} == set(s) for s in spans)
    True
    """

    def __init__(self, model, ignore_labels=("O",), **long_texts):
        preprocessor = _require_preprocessor(model, "token-classification")
        super().__init__(model, **long_texts)
        self.ignore_labels = tuple(ignore_labels)
        self.preprocessor = BertPreprocessor(
            preprocessor.tokenizer,
            sequence_length=preprocessor.sequence_length,
            return_offsets=True,
        )

    def __call__(self, inputs, batch_size=None):
        """A list of entity dicts per text."""
        texts, single = _texts(inputs, "token-classification")
        if self.stride is None:
            data = _features(self.preprocessor, texts)
            logits = self.model.predict_features(
                {name: data[name] for name in INPUT_NAMES}, batch_size
            )
        else:
            data, logits = self._windows(texts, batch_size)
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities = shifted / shifted.sum(axis=-1, keepdims=True)
        vocabulary = self.preprocessor.tokenizer.get_vocabulary()
        unknown = vocabulary.index("[UNK]") if "[UNK]" in vocabulary else -1
        id2label = self.model.id2label or {}
        results = []
        for row in range(len(texts)):
            length = int(data["padding_mask"][row].sum())
            pieces = []
            for position in range(1, length - 1):  # not [CLS] and [SEP]
                label = int(np.argmax(probabilities[row, position]))
                start = int(data["offsets_start"][row, position])
                end = int(data["offsets_end"][row, position])
                token_id = data["token_ids"][row, position]
                pieces.append(
                    {
                        "entity": id2label.get(label, f"LABEL_{label}"),
                        "score": float(probabilities[row, position, label]),
                        # An unknown word reads as itself, not as [UNK] (as in HF).
                        "piece": texts[row][start:end]
                        if token_id == unknown
                        else vocabulary[token_id],
                        "start": start,
                        "end": end,
                    }
                )
            results.append(self._group(pieces))
        return results[0] if single else results

    def _windows(self, texts, batch_size):
        """Pieces with offsets and their logits, each from its best window."""
        import tensorflow as tf  # lazy: TF only for raw text

        tokenizer = self.preprocessor.tokenizer
        ids, starts, ends = tokenizer.tokenize_tensor(
            tf.constant(texts, tf.string), with_offsets=True
        )
        windows = windows_lib.piece_windows(
            ids,
            self.preprocessor.sequence_length,
            self.stride,
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.pad_token_id,
            values={"offsets_start": (starts, 0), "offsets_end": (ends, 0)},
        )
        windows = {name: value.numpy() for name, value in windows.items()}
        logits = self.model.predict_features(
            {name: windows[name] for name in INPUT_NAMES}, batch_size
        )
        data = {
            name: windows_lib.stitch(windows[name], windows, len(texts))
            for name in ("token_ids", "padding_mask", "offsets_start", "offsets_end")
        }
        return data, windows_lib.stitch(logits, windows, len(texts))

    def _group(self, pieces):
        groups = []
        for piece in pieces:
            bi, tag = _bio_tag(piece["entity"])
            if groups and bi != "B" and tag == _bio_tag(groups[-1][-1]["entity"])[1]:
                groups[-1].append(piece)
            else:
                groups.append([piece])
        entities = []
        for group in groups:
            entity = group[0]["entity"].split("-", 1)[-1]
            if entity in self.ignore_labels:
                continue
            entities.append(
                {
                    "entity_group": entity,
                    "score": float(np.mean([p["score"] for p in group])),
                    "word": pieces_to_text([p["piece"] for p in group]),
                    "start": group[0]["start"],
                    "end": group[-1]["end"],
                }
            )
        return entities


class QuestionAnsweringPipeline:
    """Answers of a `BertQuestionAnswerer` (`answer`): text, score and
    character span, as HF's question-answering.

    Example:
    >>> qa = kbert.BertQuestionAnswerer(backbone, preprocessor=preprocessor)
    >>> ask = kbert.pipeline("question-answering", qa)
    >>> found = ask(question="Who wrote?", context="Ada wrote notes.")
    >>> sorted(found)
    ['answer', 'end', 'score', 'start']
    """

    def __init__(self, model):
        _require_preprocessor(model, "question-answering")
        self.model = model

    def __call__(self, question, context, top_k=1, batch_size=None, **options):
        """`question`/`context`: strings or lists; `options` are `answer`'s
        (`max_answer_length`, `handle_impossible_answer`, ...)."""
        return self.model.answer(
            question, context, top_k=top_k, batch_size=batch_size, **options
        )


class FillMaskPipeline:
    """Top-k tokens for the `[MASK]` of each text, as HF's fill-mask:
    `{score, token, token_str, sequence}` best first (a list of such lists
    when a text has several masks).

    Example:
    >>> fill = kbert.pipeline("fill-mask", kbert.BertMaskedLM(backbone,
    ...     preprocessor=preprocessor))
    >>> found = fill("the [MASK] jumps", top_k=2)
    >>> len(found), sorted(found[0])
    (2, ['score', 'sequence', 'token', 'token_str'])
    """

    def __init__(self, model):
        self.preprocessor = _require_preprocessor(model, "fill-mask")
        self.model = model
        vocabulary = self.preprocessor.tokenizer.get_vocabulary()
        self.vocabulary = vocabulary
        self.mask_id = vocabulary.index("[MASK]")
        self.special_ids = {vocabulary.index(t) for t in SPECIAL_TOKENS if t in vocabulary}

    def _decode(self, ids, skip_special):
        pieces = [
            self.vocabulary[i] for i in ids if not (skip_special and i in self.special_ids)
        ]
        return pieces_to_text(pieces)

    def __call__(self, inputs, top_k=5, batch_size=None):
        texts, single = _texts(inputs, "fill-mask")
        features = _features(self.preprocessor, texts)
        token_ids = features["token_ids"]
        masks = [np.flatnonzero(row == self.mask_id) for row in token_ids]
        missing = [i for i, positions in enumerate(masks) if not len(positions)]
        if missing:
            raise ValueError(
                f"Text {missing[0]} ({texts[missing[0]]!r:.80}) has no [MASK] within "
                f"the first {self.preprocessor.sequence_length} tokens."
            )
        positions = np.zeros((len(texts), max(map(len, masks))), "int32")
        for row, found in enumerate(masks):
            positions[row, : len(found)] = found
        logits = self.model.predict_features(
            {**{name: features[name] for name in INPUT_NAMES}, "mask_positions": positions},
            batch_size,
        )
        if isinstance(logits, dict):  # a pretrainer
            logits = logits["mlm_logits"]
        results = []
        for row, found in enumerate(masks):
            real = token_ids[row][features["padding_mask"][row].astype(bool)]
            per_mask = []
            for slot, position in enumerate(found):
                scores = logits[row, slot]
                shifted = np.exp(scores - scores.max())
                probabilities = shifted / shifted.sum()
                best = np.argsort(-probabilities, kind="stable")[:top_k]
                filled = []
                for token in best:
                    ids = real.copy()
                    ids[position] = token
                    filled.append(
                        {
                            "score": float(probabilities[token]),
                            "token": int(token),
                            "token_str": self._decode([token], skip_special=False),
                            "sequence": self._decode(ids, skip_special=len(found) == 1),
                        }
                    )
                per_mask.append(filled)
            results.append(per_mask[0] if len(found) == 1 else per_mask)
        return results[0] if single else results


class EmbeddingPipeline(_LongTexts):
    """Vectors: a `(hidden,)` array per text from a `BertTextEmbedder`
    ("sentence-embeddings"), or a `(tokens, hidden)` array of last-layer
    token vectors, `[CLS]` and `[SEP]` included ("feature-extraction", as
    HF's feature-extraction without its batch axis; a `BertFeatureExtractor`
    given gives its own features, `(layers, tokens, hidden)` for
    `combine="stack"`).

    Example:
    >>> embed = kbert.pipeline("sentence-embeddings",
    ...     kbert.BertTextEmbedder(backbone, preprocessor=preprocessor))
    >>> embed(["a fox", "the fox jumps"]).shape
    (2, 8)
    """

    def __init__(self, model, **long_texts):
        _require_preprocessor(model, "embedding")
        super().__init__(model, **long_texts)

    def __call__(self, inputs, batch_size=None):
        import tensorflow as tf  # lazy: TF only for raw text

        texts, single = _texts(inputs, "embedding")
        outputs = self._predict(texts, batch_size)
        if isinstance(self.model, BertFeatureExtractor):
            preprocessor = self.model.preprocessor
            ids = preprocessor.tokenizer.tokenize_tensor(tf.constant(texts, tf.string))
            lengths = ids.row_lengths().numpy() + 2
            if self.stride is None:
                lengths = np.minimum(lengths, preprocessor.sequence_length)
            axis = self.model.output_sequence_axis - 1  # in one text's row
            outputs = [
                np.take(row, np.arange(length), axis=axis)
                for row, length in zip(outputs, lengths)
            ]
        return outputs[0] if single else outputs


@dataclasses.dataclass(frozen=True)
class PipelineTask:
    pipeline_cls: type
    model_classes: tuple  # what the pipeline runs; the first one loads a source


TASKS = {
    "text-classification": PipelineTask(TextClassificationPipeline, (BertClassifier,)),
    "token-classification": PipelineTask(
        TokenClassificationPipeline, (BertTokenClassifier,)
    ),
    "question-answering": PipelineTask(QuestionAnsweringPipeline, (BertQuestionAnswerer,)),
    "fill-mask": PipelineTask(FillMaskPipeline, (BertMaskedLM, BertPretrainer)),
    "sentence-embeddings": PipelineTask(EmbeddingPipeline, (BertTextEmbedder,)),
    "feature-extraction": PipelineTask(EmbeddingPipeline, (BertFeatureExtractor,)),
}
ALIASES = {"sentiment-analysis": "text-classification", "ner": "token-classification"}


def _feature_extractor(model, source_overrides):
    """A last-layer `BertFeatureExtractor` over a backbone, task model or source."""
    if isinstance(model, BertFeatureExtractor):
        return model
    if isinstance(model, keras.Model):
        backbone = getattr(model, "backbone", model)
        preprocessor = getattr(model, "preprocessor", None)
    else:
        directory = resolve_source(model)
        preprocessor_keys = ("sequence_length", "truncation")
        preprocessor = load_preprocessor(
            directory,
            **{
                k: source_overrides.pop(k)
                for k in preprocessor_keys
                if k in source_overrides
            },
        )
        backbone = BertBackbone.from_preset(directory, **source_overrides)
    return BertFeatureExtractor(
        backbone, layers=(-1,), preprocessor=preprocessor, compile=False
    )


def pipeline(task, model, long_texts="truncate", stride=None, **overrides):
    """A callable that turns raw text into readable predictions.

    Args:
        task: `"text-classification"` (or `"sentiment-analysis"`),
            `"token-classification"` (or `"ner"`), `"question-answering"`,
            `"fill-mask"`, `"sentence-embeddings"` or `"feature-extraction"`.
        model: a task model with a preprocessor, or a preset source (a
            directory, a registered name or an `hf://` handle) to load the
            task's model class from.
        long_texts, stride: texts over the sequence length are cut
            (`"truncate"`, with a `kbert.TruncationWarning`) or read in
            windows sharing `stride` pieces (`"windows"`; not for
            fill-mask, and question answering has its own `doc_stride`).
        overrides: `from_preset` arguments when `model` is a source (e.g.
            `sequence_length=256`).

    Example:
    >>> fill = kbert.pipeline("fill-mask", "splade_tiny_mlm", sequence_length=32)
    >>> len(fill("paris is the [MASK] of france.", top_k=3))
    3
    """
    name = ALIASES.get(task, task)
    if name not in TASKS:
        raise ValueError(
            f"Unknown pipeline task {task!r}; expected one of "
            f"{sorted(TASKS) + sorted(ALIASES)}."
        )
    spec = TASKS[name]
    options = {}
    if long_texts != "truncate" or stride is not None:
        if not issubclass(spec.pipeline_cls, _LongTexts):
            raise ValueError(
                f"The {name} pipeline takes no long_texts={long_texts!r} / "
                f"stride={stride!r}."
            )
        options = {"long_texts": long_texts, "stride": stride}
    if spec.pipeline_cls is EmbeddingPipeline and name == "feature-extraction":
        return EmbeddingPipeline(_feature_extractor(model, dict(overrides)), **options)
    if not isinstance(model, keras.Model):
        model = spec.model_classes[0].from_preset(model, **overrides)
    elif overrides:
        raise ValueError(
            f"pipeline got a model object and from_preset arguments {sorted(overrides)}; "
            "pass the arguments when building the model."
        )
    if not isinstance(model, spec.model_classes):
        expected = " or ".join(cls.__name__ for cls in spec.model_classes)
        raise ValueError(
            f"The {name} pipeline runs a {expected}; got a {type(model).__name__}."
        )
    return spec.pipeline_cls(model, **options)
