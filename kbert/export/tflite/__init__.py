"""TFLite (LiteRT) for Android, in three flavours (token ids in, strings in,
MediaPipe Tasks): `exporter` writes and verifies it (`verification`,
`agreement`), `runner` runs it on `ai_edge_litert` or MediaPipe; `inputs`,
`metadata`, `flatbuffer` and `tokenizer_divergence` are its own helpers."""
