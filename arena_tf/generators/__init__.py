"""Generators for the synthetic LRA tasks (ListOps, Pathfinder), deterministic under a seed.

Each writes its output once, in the LRA release format, into a data directory the task then reads,
through `arena_tf.files.atomic_writer` so that a reader never sees half a file. This package does
not import TensorFlow (generator worker processes stay light).

    from arena_tf.generators import listops
    listops.generate("data/listops", listops.ListOpsSpec(seed=0))   # basic_{train,val,test}.tsv
"""

from arena_tf.files import atomic_writer  # noqa: F401 (the generators write through it)
