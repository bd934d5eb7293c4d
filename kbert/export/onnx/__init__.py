"""ONNX: `exporter` writes and verifies it, `runner` runs it on onnxruntime;
`axes` names its symbolic axes, `quantization` and `outliers` make and check
its int8 and float16 variants."""
