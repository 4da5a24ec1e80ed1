"""Efficiency benchmarks of the attention mechanisms (LRA section 4 and Table 2, on this machine).

    python -m arena_tf.benchmark layers    # each mechanism and peer alone: time, memory, FLOPs
    python -m arena_tf.benchmark layers --backend jax \\
        --output docs/results/efficiency/layers-jax.json
    python -m arena_tf.benchmark pairs     # ours and each peer in one process, interleaved rounds
    python -m arena_tf.benchmark train     # LRA Table 2: training steps/s and memory, 1K-4K
    python -m arena_tf.benchmark gpu       # on a GPU under JAX: layers, Table 2, ListOps (8 min)
    python -m arena_tf.benchmark precision # float32 vs mixed_bfloat16 steps/s, cpu suites' shapes
    python -m arena_tf.benchmark report    # docs/results/efficiency/report.md and its plots from
                                           # the results
    python -m arena_tf.benchmark profile linear --length 4096   # per-op time of one layer

Modules: costs (FLOP formulas, profiler check), memory (resident set, skip rule), timing, machine
(CPU, versions, matmul rate), isolated (one measurement per fresh process), backends (the Keras
backends measured under, each with its measuring module: tf_measure, jax_measure), layer_sweep
(`layers`: the layer benchmark, its sweep and its measurements), peers (what each peer is and how
to build it), pairs (each pair side by side: ratios with their spread), lra_table2 (`train`: LRA
Table 2's training steps/s and memory), gpu (`gpu`: the one-call GPU benchmark), precision
(`precision`: float32 against mixed_bfloat16 training on this CPU), targets, paper
(LRA's published numbers), plots, report, profiling.
"""
