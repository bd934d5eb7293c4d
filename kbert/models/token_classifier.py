"""BertTokenClassifier: a label per word piece (NER-style tagging)."""

import keras
import numpy as np
from keras import ops

from kbert.models import token_alignment
from kbert.models.backbone import INPUT_NAMES
from kbert.models.bio import bio_to_spans, word_offsets
from kbert.models.heads import classifier_head, label_names
from kbert.models.target_checks import TargetRule
from kbert.models.task import Task, backbone_inputs
from kbert.models.token_accuracy import TokenAccuracy
from kbert.models.windows import piece_windows, stitch

IGNORE_LABEL = token_alignment.IGNORE_LABEL


@keras.saving.register_keras_serializable(package="kbert")
class BertTokenClassifier(Task):
    """Token classification: dropout(sequence_output) -> dense logits per token.

    Labels equal to -100 (HF's convention: padding and non-first word pieces)
    are ignored by the default loss and by the default `TokenAccuracy`
    metric. Outputs float32 (batch, seq, num_classes) logits. Weight paths:
    `classifier/{kernel,bias}` (HF `classifier.*`).

    With a `preprocessor` attached, `fit` / `evaluate` / `predict` take words:
    `x` is a list of texts split on whitespace into words, or a list of word
    lists; `y` holds one label per word (ids, or tag strings when `id2label`
    is set). Each word is tokenized on its own; its label goes on its first
    piece and the other pieces get -100 (Hugging Face's
    `is_split_into_words=True` alignment). A batched `tf.data.Dataset` gives
    `(texts, labels)`, the labels an int `(batch, max_words)` tensor padded
    with -100 (`kbert.models.token_alignment.pad_word_labels` makes one).
    `predict_words` and `predict_entities` turn logits back into one label
    per word and into entity spans (long texts read whole with
    `long_texts="windows"`, as `predict` reads them).

    Example:
    >>> tagger = kbert.BertTokenClassifier(backbone, num_classes=3,
    ...     preprocessor=preprocessor, id2label={0: "O", 1: "B-PER", 2: "I-PER"})
    >>> tags = tagger.predict_words(["Ada Lovelace wrote"])  # one tag per word
    >>> len(tags[0]), set(tags[0]) <= {"O", "B-PER", "I-PER"}
    (3, True)
    """

    # === Declarations (see `kbert.models.preset_io.PresetMixin`) ===
    task_name = "token_classifier"
    hf_architecture = "BertForTokenClassification"
    hf_heads = ("classifier",)
    hf_pooler = False
    sequence_outputs = ("logits", "probabilities")
    agreement = "argmax_per_token"

    def export_outputs(self, outputs):
        return {"logits": outputs, "probabilities": ops.softmax(outputs, axis=-1)}

    def __init__(
        self, backbone, num_classes, preprocessor=None, dropout=0.1, id2label=None, **kwargs
    ):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout, self.classifier = classifier_head(
            backbone, num_classes, dropout
        )
        # === Functional model ===
        inputs = backbone_inputs()
        sequence = backbone(inputs)["sequence_output"]
        logits = ops.cast(self.classifier(self.output_dropout(sequence)), "float32")
        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout
        self.id2label = label_names(id2label)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=IGNORE_LABEL
        )

    def target_rules(self):
        model = f"BertTokenClassifier(num_classes={self.num_classes})"
        return TargetRule(
            "class_ids", self.num_classes, ignore=IGNORE_LABEL, per_token=True, model=model
        )

    def default_metrics(self):
        return [TokenAccuracy(ignore_class=IGNORE_LABEL)]

    # === Words in, word labels out ===

    @property
    def label2id(self):
        return {label: i for i, label in self.id2label.items()} if self.id2label else None

    def _require_preprocessor(self):
        if self.preprocessor is None:
            raise ValueError(
                "This BertTokenClassifier has no preprocessor: pass `preprocessor=` "
                "(e.g. a kbert.BertPreprocessor) to tag raw text."
            )
        return self.preprocessor

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """Words (and word labels) -> packed pieces (and piece labels).

        Eagerly, `x` is texts or word lists and `y` label lists; inside
        `tf.data`, `x` is a string tensor and `y` labels padded with -100.
        """
        import tensorflow as tf  # lazy: TF only for raw text

        preprocessor = self._require_preprocessor()
        if not tf.is_tensor(x):
            x = token_alignment.texts_from_words(x)
            if y is not None:
                y = token_alignment.pad_word_labels(y, x, self.label2id)
            x = tf.constant(x, tf.string)
        aligned = token_alignment.align_words(
            preprocessor.tokenizer, x, preprocessor.sequence_length, word_labels=y
        )
        features = {name: aligned[name] for name in INPUT_NAMES}
        labels = None if y is None else aligned["labels"]
        if sample_weight is not None:
            sample_weight = tf.convert_to_tensor(sample_weight)
        return keras.utils.pack_x_y_sample_weight(features, labels, sample_weight)

    def window_samples(self, x, stride, y=None):
        """Windows of whitespace-split texts (see `Task.window_samples`), with
        `word_ids`, `first_piece` and, from word labels `y`, `labels`."""
        import tensorflow as tf  # lazy: TF only for raw text

        tokenizer = self._require_preprocessor().tokenizer
        texts = token_alignment.texts_from_words(x)
        pieces, word_ids, first_piece = token_alignment.word_pieces(
            tokenizer, tf.constant(texts, tf.string)
        )
        windows = piece_windows(
            pieces,
            self._sequence_length,
            stride,
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.pad_token_id,
            values={"word_ids": (word_ids, -1), "first_piece": (first_piece, 0)},
        )
        if y is not None:
            labels = token_alignment.pad_word_labels(y, texts, self.label2id)
            windows["labels"] = token_alignment.word_to_token_labels(
                tf.gather(labels, windows["example_index"]),
                windows["word_ids"],
                windows["first_piece"],
            )
        windows = {name: value.numpy() for name, value in windows.items()}
        windows["count"] = len(texts)
        self.check_id_ranges({name: windows[name] for name in INPUT_NAMES})
        return windows

    def window_targets(self, windows, y):
        """Word labels `y` -> piece labels of the whole texts, laid out as
        `join_windows` lays out the windows' logits: each word's label on its
        first piece, -100 elsewhere and past each text's end (`windows`:
        `window_samples` of the texts with `y`)."""
        labels = stitch(windows["labels"], windows, windows["count"])
        real = stitch(windows["padding_mask"], windows, windows["count"])
        return np.where(real == 1, labels, IGNORE_LABEL)

    def predict_words(self, x, batch_size=None, long_texts="truncate", stride=None):
        """One label per whitespace-split word, from its first piece's logits.

        Labels come from `id2label` when set (else class ids); words cut off
        by the sequence length, or with no pieces, get `None`. With
        `long_texts="windows", stride=S` no word is cut: the text is read in
        windows sharing `S` pieces (see `predict`) and each word labelled
        from the window where its first piece has the most context.

        Example:
        >>> tagger = kbert.BertTokenClassifier(backbone, num_classes=3,
        ...     preprocessor=preprocessor, id2label={0: "O", 1: "B-PER", 2: "I-PER"})
        >>> tags = tagger.predict_words(["Ada Lovelace wrote", ["Babbage", "built"]])
        >>> [len(row) for row in tags]
        [3, 2]
        """
        import tensorflow as tf  # lazy: TF only for raw text

        preprocessor = self._require_preprocessor()
        stride = self._window_stride(long_texts, stride)
        texts = token_alignment.texts_from_words(x)
        if stride is None:
            aligned = token_alignment.align_words(
                preprocessor.tokenizer,
                tf.constant(texts, tf.string),
                preprocessor.sequence_length,
            )
            aligned = {name: value.numpy() for name, value in aligned.items()}
            logits = self.predict_features(
                {name: aligned[name] for name in INPUT_NAMES}, batch_size
            )
        else:  # per-token values of the whole texts, each from its best window
            windows = self.window_samples(texts, stride)
            logits = self.predict_features(
                {name: windows[name] for name in INPUT_NAMES}, batch_size
            )
            logits = self.join_windows(logits, windows, len(texts))
            aligned = {
                name: stitch(windows[name], windows, len(texts))
                for name in ("word_ids", "first_piece")
            }
        classes = np.argmax(logits, axis=-1)
        results = []
        for row, text in enumerate(texts):
            labels = [None] * len(token_alignment.split_words_py(text))
            firsts = np.nonzero(aligned["first_piece"][row])[0]
            for position in firsts:
                label = int(classes[row, position])
                word = aligned["word_ids"][row, position]
                labels[word] = self.id2label.get(label, label) if self.id2label else label
            results.append(labels)
        return results

    def predict_entities(self, x, batch_size=None, long_texts="truncate", stride=None):
        """Entity spans per text: `predict_words` read as BIO tags
        (`long_texts`, `stride`: as `predict_words` reads long texts).

        Needs `id2label` with BIO tags. Word lists are joined with spaces, so
        offsets then refer to `" ".join(words)`.

        Example:
        >>> tagger = kbert.BertTokenClassifier(backbone, num_classes=3,
        ...     preprocessor=preprocessor, id2label={0: "O", 1: "B-PER", 2: "I-PER"})
        >>> text = "Ada Lovelace wrote"
        >>> spans = tagger.predict_entities([text])[0]
        >>> all(text[span["start"] : span["end"]] == span["text"] for span in spans)
        True
        """
        if not self.id2label:
            raise ValueError("predict_entities needs id2label with BIO tags (B-X, I-X, O).")
        texts = token_alignment.texts_from_words(x)
        tags = self.predict_words(
            texts, batch_size=batch_size, long_texts=long_texts, stride=stride
        )
        return [
            bio_to_spans(
                text, word_offsets(text, token_alignment.split_words_py(text)), row
            )
            for text, row in zip(texts, tags)
        ]

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes, dropout=self.dropout, id2label=self.id2label
        )
        return config
