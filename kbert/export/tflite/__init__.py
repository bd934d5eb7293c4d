"""TFLite (LiteRT) for Android, in three flavours (token ids in, strings in,
MediaPipe Tasks): `exporter` writes and verifies it (`verification`,
`agreement`), `runner` runs it on `ai_edge_litert` or MediaPipe; `inputs`,
`metadata` and `flatbuffer` are its own helpers (the tokenizer checks every
string format shares are in `kbert.export.checks`)."""
