"""`python export/to_onnx.py RUN_DIR`: the ONNX exporter, arena_tf.export.to_onnx (its --help says
the rest)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("arena_tf.export.to_onnx", run_name="__main__", alter_sys=True)
