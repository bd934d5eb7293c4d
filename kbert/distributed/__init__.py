"""Training over several devices and processes, on the engines Keras and
TensorFlow have: JAX's `keras.distribution` (data and model parallel) and
TensorFlow's `MirroredStrategy` / `MultiWorkerMirroredStrategy`.

- `cluster`: joining a multi-process job from the environment, and sharding
  its input rows;
- `tf_multi_worker`: TensorFlow's multi-worker strategy from `TF_CONFIG`;
- `strategies`: the distributions pretraining and fine-tuning run under
  (`data_parallel`, `model_parallel` with `bert_layout_map`,
  `mirrored_strategy`).
"""
