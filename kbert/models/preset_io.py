"""`from_preset` / `save_to_preset` for every kbert model class."""


class PresetMixin:
    """Adds preset loading and saving; the formats live in `kbert.presets`."""

    @classmethod
    def from_preset(cls, source, **overrides):
        """Builds this class from a kbert preset, an HF or a Google BERT
        directory, or a registered name (`kbert.list_presets()`).

        `overrides` replace config values (backbone ones such as `dropout` or
        `dtype` too) or give task arguments such as `num_classes`.
        """
        from kbert.presets.loader import load_preset

        return load_preset(cls, source, **overrides)

    def save_to_preset(self, directory):
        """Writes a kbert preset directory (atomically) that `from_preset` reads."""
        from kbert.presets.kbert_format import save_kbert_preset

        save_kbert_preset(self, directory)
