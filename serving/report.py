"""`python -m serving.report RESULTS_DIR`: the serving bench's report, arena_tf.serving.report (its
--help says the rest)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("arena_tf.serving.report", run_name="__main__", alter_sys=True)
