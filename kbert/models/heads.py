"""The dense layers of the task heads, built one way for every task.

Each head's weights are initialized as BERT's (truncated normal with the
backbone's `initializer_range`) and follow the backbone's dtype policy.
"""

import keras


def dense_head(backbone, units, name):
    """A `Dense(units)` head layer over backbone outputs.

    Example:
    >>> dense_head(backbone, 2, "span_classifier").units
    2
    """
    return keras.layers.Dense(
        units,
        kernel_initializer=keras.initializers.TruncatedNormal(
            stddev=backbone.initializer_range
        ),
        dtype=backbone.dtype_policy,
        name=name,
    )


def classifier_head(backbone, units, dropout):
    """`(output_dropout, classifier)`: the layers of the sequence, token and
    multiple-choice classifiers (weight paths `classifier/{kernel,bias}`).

    Example:
    >>> output_dropout, classifier = classifier_head(backbone, 3, dropout=0.1)
    >>> output_dropout.rate, classifier.name
    (0.1, 'classifier')
    """
    output_dropout = keras.layers.Dropout(
        dropout, dtype=backbone.dtype_policy, name="output_dropout"
    )
    return output_dropout, dense_head(backbone, units, "classifier")


def label_names(id2label):
    """`id2label` with integer keys (JSON configs store them as strings), or None.

    Example:
    >>> label_names({"0": "neg", "1": "pos"})
    {0: 'neg', 1: 'pos'}
    """
    return {int(k): v for k, v in id2label.items()} if id2label else None
