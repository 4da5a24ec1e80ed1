"""The export commands as the README spells them, run from the repository's root:
`python export/to_onnx.py RUN_DIR` (or `python -m export.to_onnx`), and to_savedmodel, to_openvino,
to_stablehlo. Each runs its module of `arena_tf.export`, where the exporters live (and where a
program imports them: `from arena_tf.export.to_onnx import export_onnx`)."""
