"""`kbert pretrain` and `kbert fill-mask`: the command-line front of pretraining.

`add_pretrain_parser(subparsers)` and `add_fill_mask_parser(subparsers)`
declare the subcommands and set `handler` (and `func`) to a function that
takes the parsed arguments and returns an exit status.

`kbert pretrain` runs the whole pipeline in one output directory; each stage
is skipped when its result is already there, so rerunning the same command
after a crash resumes training from the last checkpoint:

    OUTPUT/vocab.txt          WordPiece vocabulary (trained unless --vocabulary)
    OUTPUT/data/{train,eval}  TFRecords (+ metadata.json, vocab.txt)
    OUTPUT/run/               checkpoints/, tensorboard/, metrics.jsonl
    OUTPUT/model/             the trained BertPretrainer, a kbert preset
    OUTPUT/results.json, OUTPUT/learning_curve.png

Example:
    kbert pretrain --corpus wikipedia --output runs/wiki --steps 2000
    kbert fill-mask runs/wiki/model "The [MASK] of France is Paris."
"""

import contextlib
import json
import os
import random
import sys
import time


def add_pretrain_parser(subparsers):
    """Declares `kbert pretrain` on an argparse `subparsers`.

    Example:
    >>> add_pretrain_parser(parser.add_subparsers())
    """
    parser = subparsers.add_parser(
        "pretrain",
        help="pretrain a BERT (masked LM + next-sentence prediction) from text",
        description="Train a WordPiece vocabulary, create pretraining data and "
        "pretrain a BertPretrainer, all under OUTPUT. Rerun the same command to "
        "resume after an interruption.",
    )
    data = parser.add_argument_group("corpus and data")
    data.add_argument(
        "--corpus",
        nargs="+",
        required=True,
        help="'wikipedia' (206 articles shipped in gensim==4.4.0) or text files "
        "with one sentence per line and blank lines between documents",
    )
    data.add_argument("--eval-corpus", nargs="+", help="held-out text files")
    data.add_argument(
        "--eval-fraction",
        type=float,
        default=0.1,
        help="documents held out for evaluation when no --eval-corpus (0.1)",
    )
    data.add_argument("--output", required=True, help="run directory")
    data.add_argument("--vocabulary", help="an existing vocab.txt (else one is trained)")
    data.add_argument("--vocabulary-size", type=int, default=8000)
    data.add_argument("--cased", action="store_true", help="keep case (default: lowercase)")
    data.add_argument("--max-seq-length", type=int, default=128)
    data.add_argument("--max-predictions-per-seq", type=int, default=20)
    data.add_argument("--masked-lm-prob", type=float, default=0.15)
    data.add_argument("--short-seq-prob", type=float, default=0.1)
    data.add_argument("--dupe-factor", type=int, default=5)
    data.add_argument("--whole-word-masking", action="store_true")
    data.add_argument(
        "--masking",
        choices=("static", "dynamic"),
        default="dynamic",
        help="mask once when creating data, or anew every epoch (default)",
    )
    model = parser.add_argument_group("model")
    model.add_argument("--num-layers", type=int, default=4)
    model.add_argument("--hidden-dim", type=int, default=256)
    model.add_argument("--num-heads", type=int, default=4)
    model.add_argument("--intermediate-dim", type=int, default=1024)
    model.add_argument("--dropout", type=float, default=0.1)
    model.add_argument(
        "--dtype",
        default="float32",
        choices=("float32", "mixed_bfloat16", "mixed_float16"),
    )
    model.add_argument(
        "--jit-compile",
        choices=("auto", "on", "off"),
        default="auto",
        help="XLA compilation; auto: on for TensorFlow and JAX, off for torch",
    )
    model.add_argument(
        "--run-eagerly", action="store_true", help="no graph compilation (debugging)"
    )
    train = parser.add_argument_group("training")
    train.add_argument("--steps", type=int, default=1000, help="optimizer steps")
    train.add_argument("--batch-size", type=int, default=32)
    train.add_argument(
        "--steps-per-epoch", type=int, help="default: one pass over the data"
    )
    train.add_argument("--optimizer", choices=("adamw", "lamb"), default="adamw")
    train.add_argument("--learning-rate", type=float, default=1e-3)
    train.add_argument("--warmup-steps", type=int, default=100)
    train.add_argument("--weight-decay", type=float, default=0.01)
    train.add_argument("--clipnorm", type=float, default=1.0, help="global-norm clipping")
    train.add_argument("--save-every", type=int, default=200, help="checkpoint interval")
    train.add_argument("--log-every", type=int, default=20)
    train.add_argument(
        "--distribution",
        choices=("none", "data_parallel", "model_parallel", "mirrored"),
        default="none",
        help="JAX: data_parallel / model_parallel; TensorFlow: mirrored",
    )
    train.add_argument("--model-parallel-size", type=int, default=2)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(handler=run_pretrain, func=run_pretrain)
    return parser


def add_fill_mask_parser(subparsers):
    """Declares `kbert fill-mask` on an argparse `subparsers`.

    Example:
    >>> add_fill_mask_parser(parser.add_subparsers())
    """
    parser = subparsers.add_parser(
        "fill-mask",
        help="print the top-k predictions for each [MASK] in a sentence",
        description="Load a pretrained model (a kbert preset with its vocabulary, "
        "e.g. OUTPUT/model of `kbert pretrain`) and fill in [MASK] tokens.",
    )
    parser.add_argument("model", help="preset directory")
    parser.add_argument("text", nargs="+", help="sentences containing [MASK]")
    parser.add_argument("--top-k", type=int, default=5)
    parser.set_defaults(handler=run_fill_mask, func=run_fill_mask)
    return parser


def run_fill_mask(args):
    import kbert
    from kbert.pretraining.fill_mask import fill_mask

    model = kbert.BertPretrainer.from_preset(args.model)
    if model.preprocessor is None:
        raise ValueError(f"{args.model} has no vocabulary (vocab.txt) to tokenize with.")
    tokenizer = model.preprocessor.tokenizer
    for text in args.text:
        print(text)
        for index, predictions in enumerate(fill_mask(model, tokenizer, text, args.top_k)):
            shown = "  ".join(f"{token} ({p:.3f})" for token, p in predictions)
            print(f"  [MASK] {index + 1}: {shown}")
    return 0


def run_pretrain(args):
    from kbert.pretraining.checkpointing import TrainingDivergedError

    started = time.time()
    os.makedirs(args.output, exist_ok=True)
    try:
        results = _pretrain(args)
    except TrainingDivergedError as error:
        print(f"kbert pretrain: training stopped: {error}", file=sys.stderr)
        return 2
    results["wall_time_s"] = round(time.time() - started, 1)
    with open(os.path.join(args.output, "results.json"), "w") as file:
        json.dump(results, file, indent=2)
    print(json.dumps(results, indent=2))
    return 0


def _pretrain(args):
    import keras

    import kbert
    from kbert.optimization.optimizers import bert_optimizer
    from kbert.preprocessing import BertTokenizer, train_vocabulary
    from kbert.pretraining.data_creation import create_pretraining_data
    from kbert.pretraining.dataset import pretraining_dataset, read_metadata
    from kbert.pretraining.evaluation import majority_baseline
    from kbert.pretraining.learning_curve import plot_learning_curve
    from kbert.pretraining.training import METRICS_FILE, pretrain

    output = args.output
    train_docs, eval_docs = _corpus(args)

    vocabulary_path = os.path.join(output, "vocab.txt")
    if args.vocabulary:
        vocabulary_path = args.vocabulary
    elif not os.path.exists(vocabulary_path):
        _say(args, f"Training a {args.vocabulary_size}-token WordPiece vocabulary...")
        from kbert.utils.atomic import atomic_file

        tokens = train_vocabulary(
            _texts(train_docs), args.vocabulary_size, lowercase=not args.cased
        )
        with atomic_file(vocabulary_path) as tmp, open(tmp, "w", encoding="utf-8") as file:
            file.writelines(token + "\n" for token in tokens)
    tokenizer = BertTokenizer(vocabulary=vocabulary_path, lowercase=not args.cased)
    vocabulary = tokenizer.get_vocabulary()

    data_options = dict(
        max_seq_length=args.max_seq_length,
        max_predictions_per_seq=args.max_predictions_per_seq,
        masked_lm_prob=args.masked_lm_prob,
        short_seq_prob=args.short_seq_prob,
        whole_word_masking=args.whole_word_masking,
        progress=not args.quiet,
    )
    train_dir = os.path.join(output, "data", "train")
    eval_dir = os.path.join(output, "data", "eval")
    if read_metadata(train_dir) is None:
        _say(args, "Creating training data...")
        create_pretraining_data(
            train_docs,
            train_dir,
            tokenizer,
            vocabulary,
            dupe_factor=args.dupe_factor,
            masking=args.masking,
            seed=args.seed,
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
            seed=args.seed + 1,
            **data_options,
        )
    train_meta = read_metadata(train_dir)
    _say(
        args,
        f"Training data: {train_meta['num_instances']} sequences, "
        f"{train_meta['num_tokens']} tokens ({args.masking} masking).",
    )

    keras.utils.set_random_seed(args.seed)
    strategy = _distribution(args)
    with strategy.scope() if strategy else contextlib.nullcontext():
        backbone = kbert.BertBackbone(
            vocabulary_size=len(vocabulary),
            num_layers=args.num_layers,
            num_heads=args.num_heads,
            hidden_dim=args.hidden_dim,
            intermediate_dim=args.intermediate_dim,
            dropout=args.dropout,
            attention_dropout=args.dropout,
            max_sequence_length=args.max_seq_length,
            dtype=args.dtype,
        )
        pretrainer = kbert.BertPretrainer(backbone, compile=False)
        pretrainer.compile(
            optimizer=bert_optimizer(
                total_steps=args.steps,
                learning_rate=args.learning_rate,
                warmup_steps=args.warmup_steps,
                optimizer=args.optimizer,
                weight_decay=args.weight_decay,
                global_clipnorm=args.clipnorm,
                mixed_float16=args.dtype == "mixed_float16",
            ),
            jit_compile=_jit_compile(args, strategy),
            run_eagerly=args.run_eagerly,
        )
    eval_data = (
        pretraining_dataset(eval_dir, args.batch_size, training=False)
        if eval_docs is not None
        else None
    )
    run_dir = os.path.join(output, "run")
    pretrain(
        pretrainer,
        train_dir,
        total_steps=args.steps,
        batch_size=args.batch_size,
        steps_per_epoch=args.steps_per_epoch,
        validation_data=eval_data,
        run_dir=run_dir,
        save_every=args.save_every,
        log_every=args.log_every,
        seed=args.seed,
        verbose=0 if args.quiet else "auto",
    )

    results = {
        "backend": keras.backend.backend(),
        "steps": args.steps,
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
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
    if os.path.exists(metrics_path):
        try:
            results["learning_curve"] = plot_learning_curve(
                metrics_path, os.path.join(output, "learning_curve.png")
            )
        except ImportError:
            print("matplotlib is not installed: no learning_curve.png", file=sys.stderr)
    _save_model(pretrainer, tokenizer, args.max_seq_length, os.path.join(output, "model"))
    results["model"] = os.path.join(output, "model")
    return results


def _save_model(pretrainer, tokenizer, sequence_length, directory):
    from kbert.preprocessing import BertPreprocessor
    from kbert.presets.kbert_format import save_kbert_preset
    from kbert.utils.atomic import atomic_directory

    with atomic_directory(directory) as tmp:
        save_kbert_preset(pretrainer, tmp)
        BertPreprocessor(tokenizer, sequence_length=sequence_length).save_to_preset(tmp)


def _corpus(args):
    """(train documents, eval documents or None); file corpora stay on disk."""
    from kbert.pretraining.documents import documents_from_texts, read_documents

    if args.corpus == ["wikipedia"]:
        from kbert.data import wikipedia_articles

        texts = [
            text for _, text in wikipedia_articles() if not text.startswith("REDIRECT")
        ]
        documents = list(documents_from_texts(texts))
    else:
        documents = args.corpus
    if args.eval_corpus:
        return documents, list(read_documents(args.eval_corpus))
    if args.eval_fraction <= 0:
        return documents, None
    if not isinstance(documents[0], list):
        documents = list(read_documents(documents))
    order = list(range(len(documents)))
    random.Random(args.seed).shuffle(order)
    held_out = set(order[: max(1, round(len(documents) * args.eval_fraction))])
    train = [d for i, d in enumerate(documents) if i not in held_out]
    return train, [d for i, d in enumerate(documents) if i in held_out]


def _texts(documents):
    """Vocabulary-training text: a list, or a streaming dataset for files."""
    if documents and isinstance(documents[0], str):
        import tensorflow as tf

        return tf.data.TextLineDataset(documents).filter(
            lambda line: tf.strings.length(line) > 0
        )
    return [sentence for document in documents for sentence in document]


def _distribution(args):
    """Sets a JAX distribution, or returns a TF strategy to build under."""
    import keras

    from kbert.pretraining import distribution

    if args.distribution == "mirrored":
        return distribution.mirrored_strategy()
    if args.distribution == "data_parallel":
        keras.distribution.set_distribution(distribution.data_parallel())
    elif args.distribution == "model_parallel":
        keras.distribution.set_distribution(
            distribution.model_parallel(args.model_parallel_size)
        )
    return None


def _jit_compile(args, strategy):
    if args.jit_compile != "auto":
        return args.jit_compile == "on"
    if strategy is not None:
        import tensorflow as tf

        # XLA cannot place MirroredStrategy replicas on logical CPU devices.
        return bool(tf.config.list_physical_devices("GPU"))
    return "auto"


def _say(args, message):
    if not args.quiet:
        print(message, flush=True)
