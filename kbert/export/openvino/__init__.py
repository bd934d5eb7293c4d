"""OpenVINO IR: `exporter` converts the verified float32 ONNX file and verifies
the IR, `runner` runs an IR or an ONNX file on OpenVINO's CPU plugin."""
