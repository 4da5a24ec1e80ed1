"""Numbers published in the LRA paper (Tay et al., 2021), from its Tables 1 and 2
(arXiv:2011.04006; docs/guide/lra-reference.md).

The paper's "transformer" is our `full`. Sparse and Longformer are absent from its Table 2 (they
only simulated sparsity with masks).
"""

TASKS = ("listops", "text", "retrieval", "image", "pathfinder")

# Table 1: test accuracy (%) per task.
ACCURACY = {
    "full": (36.37, 64.27, 57.46, 42.44, 71.40),
    "local": (15.82, 52.98, 53.39, 41.46, 66.63),
    "sparse": (17.07, 63.58, 59.59, 44.24, 71.71),
    "longformer": (35.63, 62.85, 56.89, 42.22, 69.71),
    "linformer": (35.70, 53.94, 52.27, 38.56, 76.34),
    "reformer": (37.27, 56.10, 53.40, 38.07, 68.50),
    "sinkhorn": (33.67, 61.20, 53.83, 41.23, 67.45),
    "synthesizer": (36.99, 61.68, 54.67, 41.61, 69.45),
    "bigbird": (36.05, 64.02, 59.29, 40.83, 74.87),
    "linear": (16.13, 65.90, 53.09, 42.34, 75.30),
    "performer": (18.01, 65.40, 53.82, 42.77, 77.05),
}

# Table 2 (byte-level text, batch 32, 4x4 TPU v3): lengths, steps/s and peak memory (GB) per device.
LENGTHS = (1024, 2048, 3072, 4096)
STEPS_PER_SECOND = {
    "full": (8.1, 4.9, 2.3, 1.4),
    "local": (9.2, 8.4, 7.4, 7.4),
    "linformer": (9.3, 9.1, 8.5, 7.7),
    "reformer": (4.4, 2.2, 1.5, 1.1),
    "sinkhorn": (9.1, 7.9, 6.6, 5.3),
    "synthesizer": (8.7, 5.7, 6.6, 1.9),
    "bigbird": (7.4, 3.9, 2.7, 1.5),
    "linear": (9.1, 9.3, 8.6, 7.8),
    "performer": (9.5, 9.4, 8.7, 8.0),
}
MEMORY_GB = {
    "full": (0.85, 2.65, 5.51, 9.48),
    "local": (0.42, 0.76, 1.06, 1.37),
    "linformer": (0.37, 0.55, 0.99, 0.99),
    "reformer": (0.48, 0.99, 1.53, 2.28),
    "sinkhorn": (0.47, 0.83, 1.13, 1.48),
    "synthesizer": (0.65, 1.98, 4.09, 6.99),
    "bigbird": (0.77, 1.49, 2.18, 2.88),
    "linear": (0.37, 0.57, 0.80, 1.03),
    "performer": (0.37, 0.59, 0.82, 1.06),
}

# Speed at 4K relative to the transformer, as the paper states it.
SPEEDUP_4K = {
    "performer": 5.7,
    "linformer": 5.5,
    "linear": 5.6,
    "local": 5.3,
    "sinkhorn": 3.8,
    "bigbird": 1.1,
    "reformer": 0.8,
}


def average_accuracy(name):
    """The paper's LRA average over the five tasks (Path-X excluded), or None if not in Table 1."""
    scores = ACCURACY.get(name)
    return sum(scores) / len(scores) if scores else None
