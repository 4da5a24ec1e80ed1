"""`python export/to_openvino.py RUN_DIR`: the OpenVINO exporter, arena_tf.export.to_openvino (its
--help says the rest)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("arena_tf.export.to_openvino", run_name="__main__", alter_sys=True)
