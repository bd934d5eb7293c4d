"""The pretraining pipeline behind `kbert pretrain`, in one output directory.

Each stage is skipped when its result is already there, so running the same
configuration again after a crash resumes training from the last checkpoint:

    OUTPUT/vocab.txt          WordPiece vocabulary (trained unless `vocabulary`)
    OUTPUT/data/{train,eval}  TFRecords (+ metadata.json, vocab.txt)
    OUTPUT/run/               checkpoints/, tensorboard/, metrics.jsonl
    OUTPUT/model/             the trained BertPretrainer, a kbert preset
    OUTPUT/results.json, OUTPUT/learning_curve.png
"""

import contextlib
import dataclasses
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time

import keras

from kbert.data import wikipedia_articles
from kbert.distributed import cluster, strategies
from kbert.models.backbone import BertBackbone
from kbert.models.pretrainer import BertPretrainer
from kbert.optimization.optimizers import bert_optimizer
from kbert.preprocessing.preprocessor import BertPreprocessor
from kbert.preprocessing.tokenizer import BertTokenizer
from kbert.preprocessing.vocabulary import train_vocabulary
from kbert.presets.kbert_format import save_kbert_preset
from kbert.pretraining.config import PretrainingConfig  # noqa: F401 (its home)
from kbert.pretraining.data_creation import create_pretraining_data
from kbert.pretraining.dataset import pretraining_dataset, read_metadata
from kbert.pretraining.documents import documents_from_texts, read_documents
from kbert.pretraining.evaluation import majority_baseline
from kbert.pretraining.learning_curve import plot_learning_curve
from kbert.pretraining.training import METRICS_FILE, pretrain
from kbert.utils.artifact_kinds import check_target
from kbert.utils.atomic import atomic_directory, atomic_file
from kbert.utils.checksums import update_with_file

# What a run's vocabulary, data and variables are made of: a rerun that asks
# for other values cannot resume it (`check_rerun`). The corpus files count by
# content; --steps, --learning-rate and the like may change between runs.
CORPUS_FIELDS = ("corpus", "eval_corpus", "vocabulary")
DATA_FIELDS = (
    "eval_fraction",
    "vocabulary_size",
    "cased",
    "max_seq_length",
    "max_predictions_per_seq",
    "masked_lm_prob",
    "short_seq_prob",
    "dupe_factor",
    "whole_word_masking",
    "masking",
    "seed",
)
MODEL_FIELDS = ("num_layers", "hidden_dim", "num_heads", "intermediate_dim", "optimizer")
RUN_RECORD = os.path.join("run", "arguments.json")
# What a run writes into its output (`--restart` removes them).
RUN_OUTPUTS = ("vocab.txt", "data", "run", "model", "results.json", "learning_curve.png")


def files_sha256(paths):
    """The SHA-256 of files' contents, in order ("wikipedia" counts as its name).

    Example:
    >>> files_sha256(["wikipedia"])[:12]
    '94ba15092540'
    """
    digest = hashlib.sha256()
    for path in paths or ():
        if path == "wikipedia" and not os.path.exists(path):
            digest.update(b"wikipedia\0")
            continue
        update_with_file(digest, path)
        digest.update(b"\0")
    return digest.hexdigest()


def run_record(config):
    """What `check_rerun` compares: the arguments, and the corpus files' hashes.

    Example:
    >>> record = run_record(PretrainingConfig(corpus=["wikipedia"], output="out"))
    >>> record["arguments"]["hidden_dim"], sorted(record["sha256"])
    (256, ['corpus'])
    """
    arguments = dataclasses.asdict(config)
    return {
        "arguments": {k: arguments[k] for k in DATA_FIELDS + MODEL_FIELDS},
        "sha256": {
            k: files_sha256([config.vocabulary] if k == "vocabulary" else arguments[k])
            for k in CORPUS_FIELDS
            if arguments[k]
        },
        "all_arguments": arguments,
    }


def _flag(name):
    return "--" + name.replace("_", "-")


def check_rerun(config, record):
    """Raises a `ValueError` naming what differs when `config.output` holds a
    run made of another corpus or model shape than `record` says.

    Example:
    >>> config = PretrainingConfig(corpus=["wikipedia"], output="out/wiki")
    >>> check_rerun(config, run_record(config))  # no run there yet: nothing to refuse
    """
    path = os.path.join(config.output, RUN_RECORD)
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as file:
        stored = json.load(file)
    changes = [
        f"{_flag(k)} {stored['arguments'].get(k)!r} -> {v!r}"
        for k, v in record["arguments"].items()
        if stored["arguments"].get(k) != v
    ]
    changes += [
        f"the {_flag(k)} files' contents (SHA-256 {stored['sha256'].get(k, 'none')[:12]} "
        f"-> {record['sha256'].get(k, 'none')[:12]})"
        for k in CORPUS_FIELDS
        if stored["sha256"].get(k) != record["sha256"].get(k)
    ]
    if changes:
        raise ValueError(
            f"{config.output} holds a pretraining run made with other arguments: "
            f"{'; '.join(changes)}. Its data and checkpoints cannot be reused: rerun "
            "with the run's arguments to resume it, add --restart to discard it and "
            "start afresh, or pick another --output."
        )


def _start(config):
    """Checks a rerun against the run in the output (or clears it: restart),
    then records this one."""
    record = run_record(config)
    if config.restart:
        if cluster.is_chief():
            for name in RUN_OUTPUTS:
                path = os.path.join(config.output, name)
                if os.path.isdir(path):
                    shutil.rmtree(path)
                elif os.path.exists(path):
                    os.remove(path)
        cluster.barrier("pretraining restart")
    else:
        check_rerun(config, record)
    if cluster.is_chief():
        path = os.path.join(config.output, RUN_RECORD)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as file:
            json.dump(record, file, indent=2)


def run_pretraining(config):
    """Runs (or resumes) the whole pipeline; returns the results it also writes
    to `OUTPUT/results.json`.

    Raises `TrainingDivergedError` when the loss stops being finite, and
    `ForeignFilesError` before any work when the output holds files kbert did
    not write (unless `config.overwrite`).

    Example:
    >>> # Minutes of training: tests/pretraining runs it at toy size.
    >>> results = run_pretraining(PretrainingConfig(  # doctest: +SKIP
    ...     corpus=["wikipedia"], output="out/wiki", steps=2000))
    """
    check_target(config.output, "pretraining_output", config.overwrite)
    cluster.join_cluster(
        config.coordinator, config.num_processes, config.process_id, config.multi_process
    )
    started = time.time()
    os.makedirs(config.output, exist_ok=True)
    _start(config)
    results = _pretrain(config)
    results["wall_time_s"] = round(time.time() - started, 1)
    if cluster.is_chief():
        with open(os.path.join(config.output, "results.json"), "w") as file:
            json.dump(results, file, indent=2)
    return results


def _pretrain(config):
    """The pipeline's stages; returns the results (see `run_pretraining`)."""
    output = config.output
    if not cluster.is_chief():
        # Process 0 makes the vocabulary and the data; the others read them.
        cluster.barrier("pretraining data")
    train_docs, eval_docs = _corpus(config)

    vocabulary_path = os.path.join(output, "vocab.txt")
    if config.vocabulary:
        vocabulary_path = config.vocabulary
    elif not os.path.exists(vocabulary_path):
        _say(config, f"Training a {config.vocabulary_size}-token WordPiece vocabulary...")
        tokens = train_vocabulary(
            _texts(train_docs), config.vocabulary_size, lowercase=not config.cased
        )
        with atomic_file(vocabulary_path) as tmp, open(tmp, "w", encoding="utf-8") as file:
            file.writelines(token + "\n" for token in tokens)
    tokenizer = BertTokenizer(vocabulary=vocabulary_path, lowercase=not config.cased)
    vocabulary = tokenizer.get_vocabulary()

    data_options = dict(
        max_seq_length=config.max_seq_length,
        max_predictions_per_seq=config.max_predictions_per_seq,
        masked_lm_prob=config.masked_lm_prob,
        short_seq_prob=config.short_seq_prob,
        whole_word_masking=config.whole_word_masking,
        progress=not config.quiet,
        engine=config.data_engine,
        workers=config.data_workers,
        address=config.ray_address,
    )
    train_dir = os.path.join(output, "data", "train")
    eval_dir = os.path.join(output, "data", "eval")
    if read_metadata(train_dir) is None:
        _say(config, "Creating training data...")
        create_pretraining_data(
            train_docs,
            train_dir,
            tokenizer,
            vocabulary,
            dupe_factor=config.dupe_factor,
            masking=config.masking,
            seed=config.seed,
            **data_options,
        )
    if eval_docs is not None and read_metadata(eval_dir) is None:
        # Held-out data is masked once, so every evaluation sees the same task.
        create_pretraining_data(
            eval_docs,
            eval_dir,
            tokenizer,
            vocabulary,
            dupe_factor=1,
            masking="static",
            seed=config.seed + 1,
            **data_options,
        )
    if cluster.is_chief():
        cluster.barrier("pretraining data")
    train_meta = read_metadata(train_dir)
    _say(
        config,
        f"Training data: {train_meta['num_instances']} sequences, "
        f"{train_meta['num_tokens']} tokens ({config.masking} masking).",
    )

    keras.utils.set_random_seed(config.seed)
    strategy = _distribution(config)
    with strategy.scope() if strategy else contextlib.nullcontext():
        backbone = BertBackbone(
            vocabulary_size=len(vocabulary),
            num_layers=config.num_layers,
            num_heads=config.num_heads,
            hidden_dim=config.hidden_dim,
            intermediate_dim=config.intermediate_dim,
            dropout=config.dropout,
            attention_dropout=config.dropout,
            max_sequence_length=config.max_seq_length,
            dtype=config.dtype,
        )
        pretrainer = BertPretrainer(backbone, compile=False)
        pretrainer.compile(
            optimizer=bert_optimizer(
                total_steps=config.steps,
                learning_rate=config.learning_rate,
                warmup_steps=config.warmup_steps,
                optimizer=config.optimizer,
                weight_decay=config.weight_decay,
                global_clipnorm=config.clipnorm,
                mixed_float16=config.dtype == "mixed_float16",
            ),
            jit_compile=_jit_compile(config, strategy),
            run_eagerly=config.run_eagerly,
        )
    eval_data = (
        pretraining_dataset(eval_dir, config.batch_size, training=False)
        if eval_docs is not None
        else None
    )
    run_dir = os.path.join(output, "run")
    pretrain(
        pretrainer,
        train_dir,
        total_steps=config.steps,
        batch_size=config.batch_size,
        steps_per_epoch=config.steps_per_epoch,
        validation_data=eval_data,
        run_dir=run_dir,
        save_every=config.save_every,
        log_every=config.log_every,
        seed=config.seed,
        verbose=0 if config.quiet else "auto",
    )

    results = {
        "backend": keras.backend.backend(),
        "steps": config.steps,
        "batch_size": config.batch_size,
        "max_seq_length": config.max_seq_length,
        "vocabulary_size": len(vocabulary),
        "train_sequences": train_meta["num_instances"],
        "train_tokens": train_meta["num_tokens"],
        "parameters": int(pretrainer.count_params()),
    }
    if eval_data is not None:
        scores = pretrainer.evaluate(eval_data, return_dict=True, verbose=0)
        special = [vocabulary.index(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")]
        token_id, baseline = majority_baseline(train_dir, eval_dir, special)
        results.update(
            eval_sequences=read_metadata(eval_dir)["num_instances"],
            eval_mlm_accuracy=scores["mlm_logits_mlm_accuracy"],
            eval_nsp_accuracy=scores["nsp_logits_nsp_accuracy"],
            eval_loss=scores["loss"],
            majority_token=vocabulary[token_id],
            majority_mlm_accuracy=baseline,
        )
    metrics_path = os.path.join(run_dir, METRICS_FILE)
    if cluster.is_chief() and os.path.exists(metrics_path):
        try:
            results["learning_curve"] = plot_learning_curve(
                metrics_path, os.path.join(output, "learning_curve.png")
            )
        except ImportError:
            print("matplotlib is not installed: no learning_curve.png", file=sys.stderr)
    _save_model(pretrainer, tokenizer, config.max_seq_length, os.path.join(output, "model"))
    results["model"] = os.path.join(output, "model")
    return results


def _save_model(pretrainer, tokenizer, sequence_length, directory):
    # Reading variables that span processes is collective: every process
    # saves, the others into a scratch directory that is thrown away.
    target = (
        atomic_directory(directory) if cluster.is_chief() else tempfile.TemporaryDirectory()
    )
    with target as tmp:
        save_kbert_preset(pretrainer, tmp)
        BertPreprocessor(tokenizer, sequence_length=sequence_length).save_to_preset(tmp)


def _corpus(config):
    """(train documents, eval documents or None); file corpora stay on disk."""
    if list(config.corpus) == ["wikipedia"]:
        texts = [
            text for _, text in wikipedia_articles() if not text.startswith("REDIRECT")
        ]
        documents = list(documents_from_texts(texts))
    else:
        documents = list(config.corpus)
    if config.eval_corpus:
        return documents, list(read_documents(list(config.eval_corpus)))
    if config.eval_fraction <= 0:
        return documents, None
    if not isinstance(documents[0], list):
        documents = list(read_documents(documents))
    order = list(range(len(documents)))
    random.Random(config.seed).shuffle(order)
    held_out = set(order[: max(1, round(len(documents) * config.eval_fraction))])
    train = [d for i, d in enumerate(documents) if i not in held_out]
    return train, [d for i, d in enumerate(documents) if i in held_out]


def _texts(documents):
    """Vocabulary-training text: a list, or a streaming dataset for files."""
    if documents and isinstance(documents[0], str):
        import tensorflow as tf  # lazy: TF only to stream a file corpus

        return tf.data.TextLineDataset(documents).filter(
            lambda line: tf.strings.length(line) > 0
        )
    return [sentence for document in documents for sentence in document]


def _distribution(config):
    """Sets a JAX distribution, or returns a TF strategy to build under."""
    if config.distribution == "mirrored":
        return strategies.mirrored_strategy()
    if config.distribution == "multi_worker_mirrored":
        return strategies.multi_worker_mirrored_strategy()
    if config.distribution in ("none", "data_parallel") and cluster.process_count() > 1:
        return strategies.job_data_parallel()
    if config.distribution == "data_parallel":
        keras.distribution.set_distribution(strategies.data_parallel())
    elif config.distribution == "model_parallel":
        keras.distribution.set_distribution(
            strategies.model_parallel(config.model_parallel_size)
        )
    return None


def _jit_compile(config, strategy):
    if config.jit_compile != "auto":
        return config.jit_compile == "on"
    if strategy is not None:
        import tensorflow as tf  # lazy: a mirrored strategy is TensorFlow's

        # XLA cannot place MirroredStrategy replicas on logical CPU devices.
        return bool(tf.config.list_physical_devices("GPU"))
    return "auto"


def _say(config, message):
    if not config.quiet:
        print(message, flush=True)
