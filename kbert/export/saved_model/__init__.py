"""SavedModel for TensorFlow Serving: `exporter` writes and verifies it, `runner`
runs it in a TensorFlow-only process (`serving_process.py`), as TF
Serving loads it."""
