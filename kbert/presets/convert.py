"""Converting a checkpoint to a kbert preset or a Hugging Face directory."""

from kbert.models import model_class
from kbert.presets import OUTPUT_FORMATS
from kbert.presets.formats import detect_task
from kbert.presets.hf_save import save_hf
from kbert.presets.weight_map import progress_bar
from kbert.sources import resolve_source
from kbert.utils.artifact_kinds import check_target


def convert(
    source,
    destination,
    to="kbert",
    task="auto",
    weights_only=False,
    overwrite=False,
    **overrides,
):
    """Loads `source` as a kbert model and writes it to `destination`.

    `to` is `"kbert"` (a kbert preset) or `"hf"` (a transformers directory);
    `task="auto"` takes the model the checkpoint holds; `weights_only`
    leaves the tokenizer files out; a `destination` holding files kbert did
    not write is refused unless `overwrite=True`; `overrides` go to `from_preset` (e.g.
    `num_classes`). Shows a progress bar over the weights read. Returns
    `(model, task, directory)`: what was loaded, as which task, from where.

    Example:
    >>> model, task, directory = convert("splade_tiny_mlm", "out/mlm_hf", to="hf")
    >>> task, sorted(os.listdir("out/mlm_hf"))[:2]
    ('masked_lm', ['config.json', 'model.safetensors'])
    """
    if to not in OUTPUT_FORMATS:
        raise ValueError(f"to must be one of {OUTPUT_FORMATS}; got {to!r}.")
    check_target(destination, "hf" if to == "hf" else "kbert_preset", overwrite)
    directory = resolve_source(source)
    if task == "auto":
        task = detect_task(directory)
    cls = model_class(task)
    if weights_only:
        overrides["preprocessor"] = None
    with progress_bar():
        model = cls.from_preset(directory, **overrides)
    if to == "hf":
        save_hf(model, destination, overwrite=overwrite)
    else:
        model.save_to_preset(destination, overwrite=overwrite)
    return model, task, directory
