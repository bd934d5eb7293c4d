"""BertQuestionAnswerer: extractive QA, start and end logits per token."""

import keras
from keras import ops

from kbert.models import qa_decoding, qa_labels, qa_windows
from kbert.models.backbone import INPUT_NAMES
from kbert.models.heads import dense_head
from kbert.models.target_checks import TargetRule
from kbert.models.task import Task, backbone_inputs
from kbert.utils.strings import string_list


@keras.saving.register_keras_serializable(package="kbert")
class BertQuestionAnswerer(Task):
    """Extractive question answering (HF `BertForQuestionAnswering`).

    A dense layer with two units over `sequence_output` gives float32
    `start_logits` and `end_logits`, each (batch, seq). Train on token ids
    with `y={"start_logits": start_index, "end_logits": end_index}`.
    Weight paths: `span_classifier/{kernel,bias}` (HF `qa_outputs.*`).

    With a `preprocessor` attached (its `sequence_length` is the window
    length), raw text works too:

    - `fit` / `evaluate` take `x=(questions, contexts)` and
      `y=(answer_starts, answer_ends)`, character offsets into each context
      (end exclusive; a negative start means "no answer"). Each pair becomes
      all its overlapping windows (Hugging Face's `truncation="only_second"`
      with `stride=doc_stride`) and each window is labelled with the answer's
      token positions, or `[CLS]` (0) when the window does not hold it. For
      in-memory pairs `batch_size` counts windows; a `tf.data.Dataset` of
      pair batches gives batches of varying window counts.
    - `predict((questions, contexts))` returns the logits of every window.
    - `answer(questions, contexts)` returns answer texts with character
      offsets, decoded as Hugging Face's question-answering pipeline does.

    Args:
        doc_stride: context pieces shared by consecutive windows; `None` is
            Hugging Face's default, `min(sequence_length // 2, 128)`.
        max_question_length: cut questions to this many pieces (`None`: keep
            them whole, as Hugging Face's fast tokenizers do).

    Example:
    >>> qa = kbert.BertQuestionAnswerer(backbone, preprocessor=preprocessor)
    >>> found = qa.answer("Who wrote?", "Ada wrote notes.")
    >>> sorted(found), "Ada wrote notes."[found["start"] : found["end"]] == found["answer"]
    (['answer', 'end', 'score', 'start'], True)
    """

    # === Declarations (see `kbert.models.preset_io.PresetMixin`) ===
    task_name = "question_answerer"
    hf_architecture = "BertForQuestionAnswering"
    hf_heads = ("span_classifier",)
    hf_pooler = False
    google_heads = ("span_classifier",)  # run_squad.py's cls/squad/output_*
    text_inputs = ("question", "context")
    sequence_outputs = ("start_logits", "end_logits")
    agreement = "span"
    mediapipe_task = "BertQuestionAnswerer"
    mediapipe_outputs = {"start_logits": "start_logits", "end_logits": "end_logits"}

    def export_outputs(self, outputs):
        return {
            "start_logits": outputs["start_logits"],
            "end_logits": outputs["end_logits"],
        }

    def __init__(
        self,
        backbone,
        preprocessor=None,
        doc_stride=None,
        max_question_length=None,
        **kwargs,
    ):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.span_classifier = dense_head(backbone, 2, "span_classifier")
        # === Functional model ===
        inputs = backbone_inputs()
        sequence = backbone(inputs)["sequence_output"]
        logits = ops.cast(self.span_classifier(sequence), "float32")
        outputs = {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}
        # === Config ===
        self.doc_stride = doc_stride
        self.max_question_length = max_question_length
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def default_loss(self):
        return {
            "start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        }

    def target_rules(self):
        rule = TargetRule("class_ids", model="BertQuestionAnswerer", noun="token positions")
        return {"start_logits": rule, "end_logits": rule}

    # === Raw text: windows from TF ops, answers decoded in NumPy ===

    def _require_preprocessor(self):
        if self.preprocessor is None:
            raise ValueError(
                "This BertQuestionAnswerer has no preprocessor: pass `preprocessor=` "
                "(e.g. a kbert.BertPreprocessor) to read raw questions and contexts."
            )
        return self.preprocessor

    def _window_settings(self, doc_stride=None):
        """`(tokenizer, sequence_length, doc_stride, max_question_length)`."""
        preprocessor = self._require_preprocessor()
        length = preprocessor.sequence_length
        if doc_stride is None:
            doc_stride = self.doc_stride
        if doc_stride is None:
            doc_stride = qa_windows.default_doc_stride(length)
        return preprocessor.tokenizer, length, doc_stride, self.max_question_length

    def _windows(self, questions, contexts, doc_stride=None):
        tokenizer, *settings = self._window_settings(doc_stride)
        return qa_windows.question_windows(tokenizer, questions, contexts, *settings)

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """`(questions, contexts)` (and answer character spans) -> windows."""
        import tensorflow as tf  # lazy: TF only for raw text

        if not isinstance(x, (tuple, list)) or len(x) != 2:
            raise ValueError(
                "With a preprocessor, BertQuestionAnswerer takes x=(questions, contexts)."
            )
        questions, contexts = (
            part if tf.is_tensor(part) else tf.constant(string_list(part, name), tf.string)
            for part, name in zip(x, ("questions", "contexts"))
        )
        windows = self._windows(questions, contexts)
        features = {name: windows[name] for name in INPUT_NAMES}
        labels = None
        if y is not None:
            if not isinstance(y, (tuple, list)) or len(y) != 2:
                raise ValueError(
                    "With a preprocessor, BertQuestionAnswerer takes y=(answer_starts, "
                    "answer_ends): character offsets into each context."
                )
            starts, ends = qa_labels.answer_positions(
                windows, tf.convert_to_tensor(y[0]), tf.convert_to_tensor(y[1])
            )
            labels = {"start_logits": starts, "end_logits": ends}
        if sample_weight is not None:
            sample_weight = tf.gather(
                tf.convert_to_tensor(sample_weight), windows["example_index"]
            )
        return keras.utils.pack_x_y_sample_weight(features, labels, sample_weight)

    def answer(
        self,
        questions,
        contexts,
        top_k=1,
        max_answer_length=15,
        doc_stride=None,
        handle_impossible_answer=False,
        null_threshold=0.0,
        align_to_words=True,
        batch_size=None,
    ):
        """Answers found in the contexts, as Hugging Face's QA pipeline finds them.

        Args:
            questions: a question, or a list of them.
            contexts: a context per question (or one for all of them).
            top_k: answers per question.
            max_answer_length: longest answer, in word pieces.
            doc_stride: context pieces shared by consecutive windows
                (default: the model's `doc_stride`).
            handle_impossible_answer: may answer `""` (no answer) when the
                `[CLS]` score beats the spans (SQuAD 2.0).
            null_threshold: how much more likely (in log space: logit sums)
                "no answer" must be than the best span to win; 0 is Hugging
                Face's rule. See `kbert.models.qa_decoding.decode_answers`.
            align_to_words: widen answers to whole words.
            batch_size: windows per forward pass.

        Returns:
            For one question, a dict `{"answer", "start", "end", "score"}`
            (`contexts[i][start:end] == answer`; `score` is a probability);
            a list of `top_k` such dicts when `top_k > 1`; for a list of
            questions, a list of those.

        Example:
        >>> qa = kbert.BertQuestionAnswerer(backbone, preprocessor=preprocessor)
        >>> answers = qa.answer(["Who wrote?"], ["Ada wrote notes."], top_k=2)
        >>> len(answers), len(answers[0]), answers[0][0]["score"] >= answers[0][1]["score"]
        (1, 2, True)
        """
        import tensorflow as tf  # lazy: TF only for raw text

        single = isinstance(questions, str)
        questions = string_list(questions, "questions")
        if isinstance(contexts, str):
            contexts = [contexts] * len(questions)
        contexts = string_list(contexts, "contexts")
        if len(questions) != len(contexts):
            raise ValueError(f"{len(questions)} questions but {len(contexts)} contexts.")
        if top_k < 1 or max_answer_length < 1:
            raise ValueError("top_k and max_answer_length must be at least 1.")
        windows = self._windows(
            tf.constant(questions, tf.string), tf.constant(contexts, tf.string), doc_stride
        )
        windows = {name: value.numpy() for name, value in windows.items()}
        features = {name: windows[name] for name in INPUT_NAMES}
        logits = self.predict_features(features, batch_size)
        answers = qa_decoding.decode_answers(
            logits["start_logits"],
            logits["end_logits"],
            windows,
            contexts,
            qa_decoding.continuation_flags(self.preprocessor.tokenizer.get_vocabulary()),
            top_k=top_k,
            max_answer_length=max_answer_length,
            handle_impossible_answer=handle_impossible_answer,
            null_threshold=null_threshold,
            align_to_words=align_to_words,
        )
        if top_k == 1:
            empty = {"answer": "", "start": 0, "end": 0, "score": 0.0}
            answers = [found[0] if found else empty for found in answers]
        return answers[0] if single else answers

    def get_config(self):
        config = super().get_config()
        config.update(
            doc_stride=self.doc_stride, max_question_length=self.max_question_length
        )
        return config
