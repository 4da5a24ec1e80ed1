"""`python export/to_stablehlo.py RUN_DIR`: the StableHLO exporter, arena_tf.export.to_stablehlo
(its --help says the rest)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("arena_tf.export.to_stablehlo", run_name="__main__", alter_sys=True)
