"""require_config_keys: a checkpoint config must state the model's sizes."""


def require_config_keys(config, required, path):
    """Raises a `ValueError` naming `path` and the `required` keys `config`
    lacks (sizes are never filled in with defaults: a wrong size would show
    up later as dozens of mismatched weights). An empty config is named as such.

    Example:
    >>> require_config_keys({"hidden_size": 8}, ["hidden_size"], "config.json")
    >>> try:
    ...     require_config_keys({}, ["hidden_size", "vocab_size"], "config.json")
    ... except ValueError as error:
    ...     print(error)
    config.json: the config is empty; it needs the model's sizes: hidden_size, vocab_size.
    """
    if not isinstance(config, dict):
        raise ValueError(
            f"{path}: the config must be a JSON object; got {type(config).__name__}."
        )
    if not config:
        raise ValueError(
            f"{path}: the config is empty; it needs the model's sizes: "
            f"{', '.join(required)}."
        )
    missing = [key for key in required if key not in config]
    if missing:
        raise ValueError(
            f"{path}: the config lacks required keys {missing} (the model's sizes; "
            "kbert does not guess them)."
        )
