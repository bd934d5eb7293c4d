"""Task: the base of every kbert task model (a backbone plus a head)."""

import keras
import numpy as np

from kbert.models import bucketed_predict, length_batching
from kbert.models import windows as windows_lib
from kbert.models.backbone import INPUT_NAMES, BertBackbone, fastest_jit_compile
from kbert.models.bucketed_batches import BucketedBatches
from kbert.models.divergence import with_divergence_guard
from kbert.models.functional_model import FunctionalModel
from kbert.models.id_ranges import IdRangeCheckedModel
from kbert.models.jax_state import JaxStateRestoringModel
from kbert.models.keras_export import KerasExportable
from kbert.models.lora import LoraModel
from kbert.models.prebuilt_state import PrebuiltStateModel
from kbert.models.preset_io import PresetMixin
from kbert.models.quantization import QuantizableModel
from kbert.models.target_checks import check_targets
from kbert.optimization.optimizers import bert_optimizer
from kbert.utils import long_texts as long_texts_lib

DEFAULT_LEARNING_RATE = 5e-5


def default_optimizer(learning_rate=DEFAULT_LEARNING_RATE, weight_decay=0.01):
    """AdamW as BERT fine-tuning uses it: no decay on LayerNorm and biases."""
    return bert_optimizer(learning_rate=learning_rate, weight_decay=weight_decay)


def backbone_inputs(extra_dims=()):
    """Symbolic token-id inputs, (batch, *extra_dims, seq) int32 each."""
    return {
        name: keras.Input(shape=tuple(extra_dims) + (None,), dtype="int32", name=name)
        for name in INPUT_NAMES
    }


def _is_dataset(x):
    return hasattr(x, "element_spec")


def _is_batched(x):
    """A `tf.data.Dataset` or a `keras.utils.PyDataset`: batches made already."""
    return _is_dataset(x) or isinstance(x, keras.utils.PyDataset)


class Task(
    PresetMixin,
    QuantizableModel,
    LoraModel,
    KerasExportable,
    IdRangeCheckedModel,
    JaxStateRestoringModel,
    PrebuiltStateModel,
    FunctionalModel,
):
    """A backbone plus a head, compiled with working defaults on creation.

    Subclasses build a functional graph and define `default_loss()` and
    `default_metrics()`. `compile()` fills in AdamW, the task's loss and
    metrics, and the fastest correct `jit_compile` for the backend and
    precision.

    With a `preprocessor` attached, `fit`, `evaluate` and `predict` take raw
    samples (strings, string pairs, ...), in memory or as a batched
    `tf.data.Dataset`, and run them in length buckets: each batch is padded
    to the next of a few fixed lengths (`kbert.models.length_batching`; on
    torch, `predict` pads to the batch's longest text), not to the
    preprocessor's `sequence_length`. `predict` sorts texts by length
    and returns outputs in input order; outputs with a sequence axis come
    back padded to `sequence_length`, zero at every padding position. `fit`
    groups batches by length and shuffles within and across length groups.

    Texts longer than `sequence_length`: `long_texts="truncate"` (the
    default) cuts them and warns (`kbert.TruncationWarning`);
    `long_texts="windows", stride=S` reads them in windows of
    `sequence_length` that share `S` word pieces, run length-bucketed with
    the other texts, and puts the outputs back per text, in input order:
    one-row outputs are the mean of the text's windows (`join_windows`),
    per-token outputs take each token from the window where it has the most
    context (their sequence axis then as long as the longest text). `fit`
    trains on every window with its text's label; `evaluate` scores the
    per-text outputs.

    `dtype` (e.g. `"bfloat16"`, `"mixed_bfloat16"`) is the backbone's: build
    the backbone with it, or pass it to `from_preset`.
    """

    backbone_cls = BertBackbone
    # The input whose last axis per-token targets follow (`TargetRule.per_token`).
    target_positions = "token_ids"

    @property
    def output_sequence_axis(self):
        """The axis of the sequence dimension in every output (and label), or
        None when outputs hold one value per example (`sequence_outputs`)."""
        return 1 if self.sequence_outputs else None

    def __init__(self, *args, compile=True, dtype=None, **kwargs):
        backbone_policy = self.backbone.dtype_policy.name
        policy = None if dtype is None else keras.dtype_policies.get(dtype).name
        if policy is not None and policy != backbone_policy:
            raise ValueError(
                f"{type(self).__name__}(dtype={policy!r}) differs from its backbone's "
                f"dtype {backbone_policy!r}: a task runs in its backbone's precision. "
                "Build the backbone with that dtype (`BertBackbone(..., dtype=...)`) "
                "or load with `from_preset(..., dtype=...)`."
            )
        super().__init__(*args, **kwargs)
        if compile:
            self.compile()

    def compile(
        self, optimizer="auto", loss="auto", metrics="auto", jit_compile="auto", **kwargs
    ):
        policy = self.backbone.dtype_policy
        # Raw-sample inference runs its own compiled function (`predict`); an
        # explicit `jit_compile` applies to it too ("auto": chosen per call).
        self._inference_jit_compile = jit_compile
        super().compile(
            optimizer=default_optimizer() if optimizer == "auto" else optimizer,
            loss=self.default_loss() if loss == "auto" else loss,
            metrics=self.default_metrics() if metrics == "auto" else metrics,
            jit_compile=fastest_jit_compile(policy)
            if jit_compile == "auto"
            else jit_compile,
            **kwargs,
        )

    def _follow_variable_changes(self):
        """Drops compiled functions (and a built optimizer) made for other
        variables: `quantize` and `enable_lora` replace or add variables
        after `compile()`, which Keras' cached functions would not see."""
        variables = (
            tuple(id(v) for v in self.weights),
            tuple(id(v) for v in self.trainable_weights),
        )
        known = self.__dict__.get("_kbert_variables")
        self.__dict__["_kbert_variables"] = variables
        if known is None or known == variables:
            return
        self.train_function = self.test_function = self.predict_function = None
        self.__dict__.pop("_kbert_inference", None)
        optimizer = getattr(self, "optimizer", None)
        if optimizer is not None and optimizer.built:
            self.optimizer = type(optimizer).from_config(optimizer.get_config())

    def compile_from_config(self, config):
        # Keras skips this for models that override `compile()`; ours accepts
        # the saved arguments as they are, so a loaded model trains as saved.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    # === Raw samples in ===
    # In-memory samples (lists, arrays) are preprocessed once, eagerly, to the
    # preprocessor's `sequence_length`; batches are then cut to their bucket
    # length. A `tf.data.Dataset` of raw samples gets the preprocessor mapped
    # over it and each batch cut the same way (for data that does not fit in
    # memory; its batches keep the order and size the dataset gives).

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """Raw samples -> model inputs, eagerly or inside `tf.data`.

        Tasks whose inputs are not one text or one text pair override this.
        """
        # Labels as arrays: a Python list would be split into scalars later.
        y, sample_weight = (
            np.asarray(v) if isinstance(v, list) else v for v in (y, sample_weight)
        )
        return self.preprocessor(x, y, sample_weight)

    def _takes_raw(self, x):
        """True when `x` holds raw samples for the preprocessor, not model inputs."""
        if self.preprocessor is None or isinstance(x, dict):
            return False
        if _is_dataset(x):
            spec = x.element_spec
            first = spec[0] if isinstance(spec, tuple) else spec
            return not isinstance(first, dict)
        return True

    @property
    def _sequence_length(self):
        return self.preprocessor.sequence_length

    def _window_arrays(self, x, y, sample_weight, stride):
        """`(features, y, sample_weight, example_index)`, one row per window:
        each window gets its text's label and weight (or its own labels,
        for tasks that label tokens)."""
        windows = self.window_samples(x, stride, y)
        index = windows["example_index"]
        features = {name: windows[name] for name in INPUT_NAMES}
        y, sample_weight = (
            None
            if v is None
            else length_batching.take_rows(
                np.asarray(v) if isinstance(v, list) else v, index
            )
            for v in (y, sample_weight)
        )
        if "labels" in windows:  # labels per window position
            y = windows["labels"]
        return features, y, sample_weight, index

    def target_rules(self):
        """How this task's training targets look: a `TargetRule`, a dict of
        them per output, or None (not checked). Tasks override this.

        Example:
        >>> classifier.target_rules().classes
        2
        """
        return None

    def check_targets(self, x, y):
        """Raises a `ValueError` naming the problem, the value and its
        position when concrete targets `y` do not fit model inputs `x` (a
        dict of token ids): class ids out of range or not whole, multi-hot
        values other than 0 and 1, non-finite numbers, strings, a count of
        targets other than the count of examples, per-token labels of
        another length. `fit` and `evaluate` call it before Keras sees the
        data (for a `tf.data.Dataset`, on its first batch).

        Example:
        >>> try:
        ...     classifier.check_targets(token_inputs, np.array([0, 1, 2]))
        ... except ValueError as error:
        ...     print(error)
        labels[2] is 2; BertClassifier(num_classes=2) takes class ids 0..1.
        """
        rule = self.target_rules()
        if not isinstance(x, dict) or "token_ids" not in x:
            return
        shape = tuple(x["token_ids"].shape)
        if shape and shape[0] == 0:
            raise ValueError(
                f"{type(self).__name__} got no examples to train or evaluate on "
                f"(token_ids of shape {shape})."
            )
        if rule is None:
            return
        positions = x.get(self.target_positions, x["token_ids"])
        check_targets(y, rule, shape[0], tuple(positions.shape)[-1])

    def _check_dataset_targets(self, dataset):
        """`check_targets` on the first batch of a `tf.data.Dataset` (raw
        samples preprocessed first) or of a user's `keras.utils.PyDataset`;
        other data sources are not checked (a strategy's distributed dataset
        has an `element_spec`, but no `take`)."""
        if self.target_rules() is None:
            return
        if isinstance(dataset, keras.utils.PyDataset):
            if not isinstance(dataset, BucketedBatches):  # kbert's: checked when built
                x, y, _ = keras.utils.unpack_x_y_sample_weight(dataset[0])
                self.check_targets(x, y)
            return
        if not hasattr(dataset, "take") or not _is_dataset(dataset):
            return
        if self._takes_raw(dataset):
            self._check_batch_targets(self._first_raw_batch(dataset))
        else:
            self._check_batch_targets(next(dataset.take(1).as_numpy_iterator(), None))

    def _check_batch_targets(self, batch):
        """`check_targets` on one batch of model inputs (None: an empty dataset)."""
        if batch is not None and self.target_rules() is not None:
            x, y, _ = keras.utils.unpack_x_y_sample_weight(batch)
            self.check_targets(x, y)

    def _first_raw_batch(self, dataset):
        """The first batch of a `tf.data.Dataset` of raw samples, preprocessed;
        its texts are not counted (the call reads them again)."""
        with long_texts_lib.uncounted():
            for batch in self._bucketed_raw_dataset(dataset.take(1)).as_numpy_iterator():
                return batch
        return None  # an empty dataset

    def _check_raw_count(self, x):
        """In-memory raw samples: refuse none at all by name."""
        if not _is_batched(x) and hasattr(x, "__len__") and len(x) == 0:
            raise ValueError(
                f"{type(self).__name__} got no samples: x is empty ({x!r}); "
                "fit and evaluate take at least one example."
            )

    def _raw_arrays(self, x, y=None, sample_weight=None, stride=None, targets=False):
        """`(features, y, sample_weight)` as NumPy arrays from in-memory raw
        samples; with a `stride`, one row per window (`_window_arrays`).
        `targets=True` checks the targets (`check_targets`)."""
        if targets:
            self._check_raw_count(x)
        if stride is not None:
            features, y, sample_weight = self._window_arrays(x, y, sample_weight, stride)[
                :3
            ]
            if targets:
                self.check_targets(features, y)
            return features, y, sample_weight
        data = self.preprocess_samples(x, y, sample_weight)
        data = keras.tree.map_structure(np.asarray, data)
        features, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        if features["token_ids"].ndim < len(self.input["token_ids"].shape):
            # One sample (a bare string or pair): a batch of one.
            features, y, sample_weight = (
                None if v is None else keras.tree.map_structure(lambda a: a[None], v)
                for v in (features, y, sample_weight)
            )
        self.check_id_ranges(features)  # a preprocessor with a larger vocabulary
        if targets:
            self.check_targets(features, y)
        return features, y, sample_weight

    def _bucketed_dataset(self, features, y, sample_weight, batch_size, shuffle):
        """In-memory samples as length-bucketed batches (a new grouping per epoch)."""
        batches = BucketedBatches(
            features,
            y,
            sample_weight,
            batch_size,
            self._sequence_length,
            shuffle=shuffle,
            coarse=self._coarse_training_buckets,
            label_axis=self.output_sequence_axis,
            sequence_names=INPUT_NAMES,
        )
        if keras.backend.backend() == "tensorflow":
            return batches.as_tf_dataset()
        return batches

    def _bucketed_raw_dataset(self, dataset, coarse=False):
        """A batched `tf.data.Dataset` of raw samples, preprocessed and each
        batch cut to its bucket length."""
        import tensorflow as tf  # lazy: tf.data pipelines are TensorFlow

        buckets = length_batching.bucket_lengths(self._sequence_length, coarse)
        buckets = tf.constant(buckets)
        axis = self.output_sequence_axis
        limits = []  # what `cut` counts texts against, known once traced

        def cut(*element):
            with long_texts_lib.deferred_counts() as deferred:
                x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
                    self.preprocess_samples(*element)
                )
            limits[:] = [(limit, name) for _, limit, name in deferred]
            mask = tf.cast(x["padding_mask"], tf.int32)
            longest = tf.reduce_max(tf.reduce_sum(mask, axis=-1))
            length = tf.gather(buckets, tf.argmax(tf.cast(buckets >= longest, tf.int32)))
            x = {
                name: value[..., :length] if name in INPUT_NAMES else value
                for name, value in x.items()
            }

            def cut_label(value):
                if axis is None or value is None or value.shape.rank <= axis:
                    return value
                return tf.gather(value, tf.range(length), axis=axis)

            y, sample_weight = (
                None if v is None else tf.nest.map_structure(cut_label, v)
                for v in (y, sample_weight)
            )
            lengths = tuple(lengths for lengths, _, _ in deferred)
            return keras.utils.pack_x_y_sample_weight(x, y, sample_weight), lengths

        def counted(batch, lengths):  # as the batch is read: the texts it cut
            counts = [
                op
                for value, (limit, name) in zip(lengths, limits)
                for op in long_texts_lib.count_cut(value, limit, name)
            ]
            with tf.control_dependencies(counts):
                return tf.nest.map_structure(tf.identity, batch)

        mapped = dataset.map(cut, num_parallel_calls=tf.data.AUTOTUNE)
        return mapped.prefetch(tf.data.AUTOTUNE).map(counted)

    @property
    def _coarse_training_buckets(self):
        # Under XLA each new shape compiles a training step: fewer, coarser buckets.
        return bool(getattr(self, "jit_compile", False))

    def _training_data(self, x, y, sample_weight, batch_size, shuffle, stride=None):
        """Raw samples -> a length-bucketed dataset for `fit` / `evaluate`."""
        if _is_dataset(x):
            if stride is not None:
                raise ValueError(
                    'long_texts="windows" takes in-memory samples, not a tf.data.Dataset.'
                )
            # The first batch, read once and not counted: its targets checked,
            # and Keras' metrics built on it (Keras builds them on a batch it
            # reads, and on JAX and PyTorch one it reads ahead, before the first
            # step), so that the truncation warning counts the texts run.
            first = self._first_raw_batch(x)
            self._check_batch_targets(first)
            if first is not None:
                self._symbolic_build(data_batch=first)
            return self._bucketed_raw_dataset(x, self._coarse_training_buckets)
        features, y, sample_weight = self._raw_arrays(
            x, y, sample_weight, stride, targets=True
        )
        batch_size = batch_size or length_batching.DEFAULT_BATCH_SIZE
        return self._bucketed_dataset(features, y, sample_weight, batch_size, shuffle)

    def _split_validation(self, x, y, sample_weight, validation_split, stride=None):
        """Keras' `validation_split` on raw samples: the last fraction, unshuffled
        (with windows: the windows of the last fraction of the texts)."""
        if stride is None:
            features, y, sample_weight = self._raw_arrays(x, y, sample_weight, targets=True)
            text_of_row = np.arange(len(length_batching.token_lengths(features)))
        else:
            features, y, sample_weight, text_of_row = self._window_arrays(
                x, y, sample_weight, stride
            )
            self.check_targets(features, y)
        texts = int(text_of_row.max(initial=-1)) + 1
        split = int(texts * (1.0 - validation_split))
        if not 0 < split < texts:
            raise ValueError(
                f"validation_split={validation_split} leaves no training or no "
                f"validation samples out of {texts}."
            )
        first, last = (
            np.flatnonzero(text_of_row < split),
            np.flatnonzero(text_of_row >= split),
        )
        return [
            tuple(length_batching.take_rows(v, index) for v in (features, y, sample_weight))
            for index in (first, last)
        ]

    def fit(
        self,
        x=None,
        y=None,
        batch_size=None,
        sample_weight=None,
        shuffle=True,
        long_texts="truncate",
        stride=None,
        stop_on_nan=True,
        **kwargs,
    ):
        """`keras.Model.fit`; with a preprocessor attached, `x` may hold raw samples.

        Raw samples train in length-bucketed batches of `batch_size` (default
        32); `shuffle=True` shuffles within and across length groups each
        epoch, `shuffle=False` keeps the given order within mega-batches of
        50 batches. `long_texts="windows"` trains on every window of each
        text (and validates on the validation texts' windows), each with
        its text's label and sample weight; `batch_size` then counts windows.

        Targets are checked first (`check_targets`). A NaN or infinite loss
        raises `kbert.models.divergence.TrainingDivergedError` naming the
        epoch and step (`stop_on_nan=False`, or Keras' `TerminateOnNaN` in
        `callbacks`, turns that off).
        """
        self._follow_variable_changes()
        kwargs["callbacks"] = with_divergence_guard(
            kwargs.get("callbacks"), type(self).__name__, stop_on_nan
        )
        stride = self._window_stride(long_texts, stride)
        validation_batch_size = kwargs.pop("validation_batch_size", None) or batch_size
        # training and validation texts are cut in one call, and a tf.data
        # map counts as fit reads it: one warning, when fit ends
        with long_texts_lib.one_truncation_warning():
            if self._takes_raw(x):
                validation_split = kwargs.pop("validation_split", 0.0)
                default = batch_size or length_batching.DEFAULT_BATCH_SIZE
                if validation_split and not _is_dataset(x):
                    train, held_out = self._split_validation(
                        x, y, sample_weight, validation_split, stride
                    )
                    x = self._bucketed_dataset(*train, default, shuffle)
                    if kwargs.get("validation_data") is None:  # Keras: validation_data wins
                        kwargs["validation_data"] = self._bucketed_dataset(
                            *held_out, validation_batch_size or default, False
                        )
                else:
                    if validation_split:
                        kwargs["validation_split"] = validation_split  # Keras explains
                    x = self._training_data(
                        x, y, sample_weight, batch_size, shuffle, stride
                    )
                y = sample_weight = batch_size = None
            else:
                self._check_given_targets(x, y)
            if kwargs.get("validation_data") is not None:
                kwargs["validation_data"] = self._validation_data(
                    kwargs["validation_data"], validation_batch_size, stride
                )
            if validation_batch_size is not None and not _is_batched(
                kwargs.get("validation_data")
            ):
                kwargs["validation_batch_size"] = validation_batch_size
            if _is_batched(x):
                shuffle = False  # batches come shuffled (or not) as they are
            return super().fit(
                x,
                y,
                batch_size=batch_size,
                sample_weight=sample_weight,
                shuffle=shuffle,
                **kwargs,
            )

    def _validation_data(self, validation_data, batch_size, stride=None):
        if isinstance(validation_data, keras.utils.PyDataset):
            self._check_dataset_targets(validation_data)
            return validation_data
        if _is_dataset(validation_data):
            self._check_dataset_targets(validation_data)
            if self._takes_raw(validation_data):
                return self._bucketed_raw_dataset(
                    validation_data, self._coarse_training_buckets
                )
            return validation_data
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(tuple(validation_data))
        if not self._takes_raw(x):
            self.check_targets(x, y)
            return validation_data
        return self._training_data(x, y, sample_weight, batch_size, False, stride)

    def evaluate(
        self,
        x=None,
        y=None,
        batch_size=None,
        sample_weight=None,
        long_texts="truncate",
        stride=None,
        **kwargs,
    ):
        """`keras.Model.evaluate`; with a preprocessor, `x` may hold raw samples
        (run in length-bucketed batches, longest first). With
        `long_texts="windows"`, the loss and metrics score each text's
        outputs put back together from its windows (see `predict`)."""
        self._follow_variable_changes()
        stride = self._window_stride(long_texts, stride)
        with long_texts_lib.one_truncation_warning():  # a tf.data map counts as read
            if stride is not None and self._takes_raw(x):
                self._check_raw_count(x)
                if y is None:
                    raise ValueError('evaluate(long_texts="windows") needs labels `y`.')
                windows = self.window_samples(x, stride, y)
                y = self.window_targets(windows, y)  # checked before the model runs
                outputs = self._predict_windows(windows, batch_size)
                return self._score(outputs, y, sample_weight, kwargs.get("return_dict"))
            # `fit` evaluates its (already bucketed) validation data this way.
            if not kwargs.get("_use_cached_eval_dataset") and self._takes_raw(x):
                x = self._training_data(x, y, sample_weight, batch_size, shuffle=False)
                y = sample_weight = batch_size = None
            elif not kwargs.get("_use_cached_eval_dataset"):
                self._check_given_targets(x, y)
            return super().evaluate(
                x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs
            )

    def _check_given_targets(self, x, y):
        """Model inputs given as they are: their targets checked, or a
        dataset's first batch."""
        if _is_dataset(x) or isinstance(x, keras.utils.PyDataset):
            self._check_dataset_targets(x)
        elif isinstance(x, dict):
            self.check_targets(x, y)

    def window_targets(self, windows, y):
        """The labels `y` of the samples cut into `windows` (`window_samples`
        with `y`) as `evaluate(long_texts="windows")` scores them against
        `join_windows`' outputs: one per text as given, unless the outputs are
        per token (a task then says how its labels follow the joined tokens,
        as `BertTokenClassifier` does)."""
        if self.output_sequence_axis is not None:
            raise ValueError(
                f'{type(self).__name__}.evaluate(long_texts="windows") is not '
                "supported: its outputs are per token. predict(texts, "
                'long_texts="windows") gives outputs for the whole text to score.'
            )
        return y

    def _score(self, outputs, y, sample_weight, return_dict):
        """`evaluate`'s result for outputs already computed."""
        self.reset_metrics()
        y, sample_weight = (
            None if v is None else keras.tree.map_structure(keras.ops.convert_to_tensor, v)
            for v in (np.asarray(y) if isinstance(y, list) else y, sample_weight)
        )
        outputs = keras.tree.map_structure(keras.ops.convert_to_tensor, outputs)
        loss = self.compute_loss(
            y=y, y_pred=outputs, sample_weight=sample_weight, training=False
        )
        self._loss_tracker.update_state(loss)
        logs = self.compute_metrics(None, y, outputs, sample_weight)
        logs = {name: float(keras.ops.convert_to_numpy(v)) for name, v in logs.items()}
        return logs if return_dict else self._flatten_metrics_in_order(logs)

    def predict(
        self,
        x,
        batch_size=None,
        verbose="auto",
        steps=None,
        callbacks=None,
        long_texts="truncate",
        stride=None,
    ):
        """`keras.Model.predict`; with a preprocessor attached, `x` may hold raw
        samples, run in length buckets (see the class docstring) and returned
        in input order. `long_texts="windows", stride=S` reads long texts in
        windows and joins their outputs per text.

        Example:
        >>> classifier = kbert.BertClassifier(backbone, 2, preprocessor=preprocessor)
        >>> long = " ".join(["the fox jumps"] * 20)
        >>> classifier.predict([long, "a fox"], long_texts="windows", stride=4,
        ...                    verbose=0).shape
        (2, 2)
        """
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(
                f"batch_size={batch_size!r}: predict takes a whole number of examples "
                "per batch, at least 1."
            )
        self._follow_variable_changes()
        stride = self._window_stride(long_texts, stride)
        if stride is not None and self._takes_raw(x):
            if _is_dataset(x):
                raise ValueError(
                    'long_texts="windows" takes in-memory samples, not a tf.data.Dataset.'
                )
            return self._predict_windows(
                self.window_samples(x, stride), batch_size, verbose, callbacks
            )
        if not self._takes_raw(x):
            return super().predict(
                x, batch_size=batch_size, verbose=verbose, steps=steps, callbacks=callbacks
            )
        if _is_dataset(x):
            with long_texts_lib.one_truncation_warning():  # counts as batches are made
                batches = (
                    (None, element if isinstance(element, dict) else element[0])
                    for element in self._bucketed_raw_dataset(x).as_numpy_iterator()
                )
                return bucketed_predict.run_batches(
                    self, batches, None, None, verbose, callbacks
                )
        features = self._raw_arrays(x)[0]
        return self.predict_features(features, batch_size, verbose, callbacks)

    def _predict_windows(self, windows, batch_size, verbose=0, callbacks=None):
        """Outputs per sample of `window_samples`' windows, joined."""
        features = {name: windows[name] for name in INPUT_NAMES}
        outputs = self.predict_features(
            features, batch_size, verbose, callbacks, model=self._window_model()
        )
        return self.join_windows(outputs, windows, int(windows["count"]))

    def predict_features(
        self, features, batch_size=None, verbose=0, callbacks=None, model=None
    ):
        """Outputs for preprocessed `features` (NumPy, padded to the
        preprocessor's `sequence_length`), run in length buckets, in input order
        (by `model`, a model over this one's layers, when given)."""
        self.check_id_ranges(features)
        batch_size = batch_size or length_batching.DEFAULT_BATCH_SIZE
        count = len(length_batching.token_lengths(features))
        batches = length_batching.predict_batches(
            features,
            batch_size,
            self._sequence_length,
            fixed_shapes=bucketed_predict.compiles_per_shape(),
        )
        steps = -(-count // batch_size)
        return bucketed_predict.run_batches(
            self, batches, count, steps, verbose, callbacks, model
        )

    # === Long texts: windows ===

    def _window_stride(self, long_texts, stride):
        """The checked window overlap, or None for `long_texts="truncate"`."""
        if long_texts == "truncate" and stride is None:
            return None
        if self.preprocessor is None:
            raise ValueError(
                f"long_texts={long_texts!r} reads raw texts: this "
                f"{type(self).__name__} has no preprocessor."
            )
        cls = type(self)
        if long_texts == "windows" and (
            self.target_positions != Task.target_positions  # masks placed per text
            or (  # samples of its own (QA's windows) and no windows of them
                cls.preprocess_samples is not Task.preprocess_samples
                and cls.window_samples is Task.window_samples
            )
        ):
            way_out = (
                "it reads long contexts in overlapping windows of its own (`doc_stride`)."
                if hasattr(self, "doc_stride")
                else "a longer `sequence_length` (up to the model's "
                "max_sequence_length) reads more of each text."
            )
            raise ValueError(
                f'{cls.__name__} does not take long_texts="windows": {way_out}'
            )
        return long_texts_lib.check_long_texts(long_texts, stride, self._sequence_length)

    def window_samples(self, x, stride, y=None):
        """Windows of in-memory raw samples (one text, or text pairs whose
        second text is cut: the first stays whole in every window, as
        Hugging Face's `truncation="only_second"` with a `stride`), as
        NumPy: the model inputs, `example_index`, `window_start` and `count`
        (how many samples). Tasks whose labels follow the tokens override
        this and add `labels` from `y`."""
        import tensorflow as tf  # lazy: TF only for raw text

        segments, batched = self.preprocessor._segments(x)
        if len(segments) == 2 and self.output_sequence_axis is not None:
            raise ValueError(
                f'{type(self).__name__}(long_texts="windows") reads single texts, '
                "not text pairs: its outputs are per token, and every window of a "
                "pair repeats the first text, so its tokens have no one window to "
                "come from. Pass "
                'single texts, or pairs with long_texts="truncate" (and a longer '
                "sequence_length if they are cut)."
            )
        tokenizer = self.preprocessor.tokenizer
        ids = [tokenizer.tokenize_tensor(segment) for segment in segments]
        if len(ids) == 2:
            self._check_window_pairs(*ids, stride)
        windows = windows_lib.piece_windows(
            ids[-1],
            self._sequence_length,
            stride,
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.pad_token_id,
            prefix=ids[0] if len(ids) == 2 else None,
        )
        windows = {name: value.numpy() for name, value in windows.items()}
        windows["count"] = int(tf.shape(segments[0])[0])
        windows["pairs"] = len(ids) == 2
        self.check_id_ranges({name: windows[name] for name in INPUT_NAMES})
        return windows

    def _check_window_pairs(self, first, second, stride):
        """Refuses, naming the pair, text pairs whose windows cannot be cut:
        a first text that leaves a window no more than `stride` pieces of the
        second (`_segments` has checked the counts)."""
        first, second = (t.row_lengths().numpy() for t in (first, second))
        length = self._sequence_length
        budget = length - first - 3  # [CLS] first [SEP] second... [SEP]
        bad = np.flatnonzero((second > budget) & (budget <= stride))
        if len(bad):
            row = int(bad[0])
            raise ValueError(
                f'long_texts="windows": pair {row}\'s first text has {first[row]} '
                f"word pieces, which leaves {max(int(budget[row]), 0)} of "
                f"sequence_length={length} (less 3 special tokens) to each window of "
                f"its second text ({second[row]} pieces), and windows sharing "
                f"stride={stride} pieces need more than {stride}. Shorten the first "
                "text, lower stride, or raise sequence_length."
            )

    def _window_model(self):
        """The model run on windows (before `join_windows`): this task."""
        return self

    def join_windows(self, outputs, windows, count):
        """Window outputs -> one per text: the mean of its windows' outputs,
        or for per-token outputs each token from its best window
        (`kbert.models.windows.stitch`)."""
        index = windows["example_index"]
        axis = self.output_sequence_axis
        if axis is None:
            return keras.tree.map_structure(
                lambda v: windows_lib.mean_per_example(v, index, count), outputs
            )
        if windows.get("pairs"):  # `window_samples` refuses these first
            raise ValueError(
                f"{type(self).__name__} joins per-token outputs of single texts only; "
                'long_texts="windows" got text pairs.'
            )
        return keras.tree.map_structure(
            lambda v: windows_lib.stitch(v, windows, count, axis), outputs
        )

    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self):
        return None

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor)
            if self.preprocessor is not None
            else None,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.saving.deserialize_keras_object(
                config["preprocessor"]
            )
        return cls(**config)
