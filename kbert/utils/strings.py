"""Python strings in, checked: each item a `str` (or UTF-8 `bytes`, as
tf-text takes them), else a `ValueError` naming its position and type."""

import numpy as np


def checked_string(value, where):
    """`value` if it is a `str`, or valid UTF-8 `bytes`; else a `ValueError`
    saying what `where` holds instead.

    Example:
    >>> checked_string("a film", "inputs[0]")
    'a film'
    >>> checked_string(None, "inputs[1]")
    Traceback (most recent call last):
    ...
    ValueError: inputs[1] is None; expected a string.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, np.bytes_)):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{where} is not valid UTF-8 ({error.reason} at byte "
                f"{error.start}): {bytes(value[:40])!r}. Decode it to str first."
            ) from None
        return bytes(value)
    if value is None:
        raise ValueError(f"{where} is None; expected a string.")
    if isinstance(value, (list, tuple, np.ndarray, dict)):
        raise ValueError(
            f"{where} is a {type(value).__name__}: nested lists are not "
            "supported. Pass one flat list of strings (one per example); "
            "for sentence pairs pass a tuple of two such lists."
        )
    raise ValueError(f"{where} is {type(value).__name__} {value!r:.80}; expected a string.")


def string_list(values, name):
    """A list of checked strings (`checked_string`) from a string or a
    list/tuple/1-D array of them; bytes come back decoded.

    Example:
    >>> string_list(["who?", b"why?"], "questions")
    ['who?', 'why?']
    >>> string_list(["who?", 3], "questions")
    Traceback (most recent call last):
    ...
    ValueError: questions[1] is int 3; expected a string.
    """
    if isinstance(values, (str, bytes, np.str_, np.bytes_)):
        values = [values]
    elif isinstance(values, np.ndarray):
        values = values.reshape(-1).tolist() if values.ndim <= 1 else values
    if not isinstance(values, (list, tuple)):
        raise ValueError(
            f"{name} must be a string or a list of strings; received "
            f"{type(values).__name__} {values!r:.80}."
        )
    result = []
    for index, value in enumerate(values):
        value = checked_string(value, f"{name}[{index}]")
        result.append(value.decode("utf-8") if isinstance(value, bytes) else value)
    return result


def utf8_bytes(value):
    """`value` as an array; strings (`str` or object arrays) as UTF-8 bytes, the
    way TensorFlow's and LiteRT's string tensors take them.

    Example:
    >>> utf8_bytes(["a fine film"]), utf8_bytes([1, 2]).dtype.kind
    (array([b'a fine film'], dtype='|S11'), 'i')
    """
    value = np.asarray(value)
    if value.dtype.kind in "UO":
        return np.vectorize(lambda s: s.encode("utf-8"), otypes=[object])(value).astype("S")
    return value
