"""Efficiency benchmarks of the attention mechanisms (LRA section 4 and Table 2, on this machine).

    python -m arena_tf.benchmark layers    # each mechanism and peer alone: time, memory, FLOPs
    python -m arena_tf.benchmark layers --backend jax --output docs/efficiency/layers-jax.json
    python -m arena_tf.benchmark pairs     # ours and each peer in one process, interleaved rounds
    python -m arena_tf.benchmark train     # LRA Table 2: training steps/s and memory, 1K-4K
    python -m arena_tf.benchmark report    # docs/efficiency.md and its plots from the results
    python -m arena_tf.benchmark profile linear --length 4096   # per-op time of one layer

Modules: costs (FLOP formulas, profiler check), memory (resident set, skip rule), timing, machine
(CPU, versions, matmul rate), isolated (one measurement per fresh process), backends (the Keras
backends measured under, each with its measuring module: tf_measure, jax_measure), layers (the
layer benchmark: the sweep and its measurements), peers (what each peer is and how to build it),
pairs (each pair side by side: ratios with their spread), training, targets, paper (LRA's
published numbers), plots, report, profiling.
"""
