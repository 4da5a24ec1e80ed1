"""`python export/to_savedmodel.py RUN_DIR`: the SavedModel exporter, arena_tf.export.to_savedmodel
(its --help says the rest)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("arena_tf.export.to_savedmodel", run_name="__main__", alter_sys=True)
