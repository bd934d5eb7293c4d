"""What one pretraining run needs (`kbert pretrain` has a flag per field).

Plain Python, no Keras: the command line declares its flags from it.
"""

import dataclasses

# JAX: data_parallel / model_parallel; TensorFlow: mirrored (one process) or
# multi_worker_mirrored (a TF_CONFIG job).
DISTRIBUTIONS = (
    "none",
    "data_parallel",
    "model_parallel",
    "mirrored",
    "multi_worker_mirrored",
)


@dataclasses.dataclass(frozen=True)
class PretrainingConfig:
    """Everything one pretraining run needs; `kbert pretrain` has a flag per field.

    Example:
    >>> config = PretrainingConfig(corpus=["wikipedia"], output="out/wiki", steps=2000)
    >>> config.vocabulary_size, config.masking
    (8000, 'dynamic')
    """

    # Corpus and data.
    # ("wikipedia",), or text files: a sentence a line, blank lines between documents
    corpus: tuple
    output: str  # the run directory
    overwrite: bool = False  # write into an output holding files kbert did not write
    restart: bool = False  # discard the run already in output and start afresh
    eval_corpus: tuple = None  # held-out text files
    eval_fraction: float = 0.1  # documents held out when there is no eval_corpus
    vocabulary: str = None  # an existing vocab.txt (else one is trained)
    vocabulary_size: int = 8000
    cased: bool = False
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 5
    whole_word_masking: bool = False
    masking: str = (
        "dynamic"  # "static": mask once when creating data; "dynamic": every epoch
    )
    # Creating the data on a distributed engine (kbert.utils.ray_engine).
    data_engine: str = "local"  # "local" (this process) or "ray"
    data_workers: int = 2  # Ray workers for the data (a local Ray on 127.0.0.1)
    ray_address: str = None  # a Ray cluster to create the data on instead
    # Model.
    num_layers: int = 4
    hidden_dim: int = 256
    num_heads: int = 4
    intermediate_dim: int = 1024
    dropout: float = 0.1
    dtype: str = "float32"
    jit_compile: str = (
        "auto"  # "auto": on for TensorFlow and JAX, off for torch; "on", "off"
    )
    run_eagerly: bool = False
    # Training.
    steps: int = 1000
    batch_size: int = 32
    steps_per_epoch: int = None  # default: one pass over the data
    optimizer: str = "adamw"
    learning_rate: float = 1e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    clipnorm: float = 1.0
    save_every: int = 200
    log_every: int = 20
    distribution: str = "none"  # one of DISTRIBUTIONS
    model_parallel_size: int = 2
    seed: int = 0
    quiet: bool = False
    # Multi-process jobs (JAX; see kbert.distributed.cluster): None reads the environment.
    coordinator: str = None  # host:port of process 0
    num_processes: int = None
    process_id: int = None
    multi_process: bool = False  # join the job JAX detects (TPU pod slice, SLURM)
