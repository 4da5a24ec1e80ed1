"""Memory: the process's resident set (current and peak) and the estimate behind the skip rule.

Each configuration runs in a fresh process, so its peak resident set is its own; what it adds is
reported as the peak above the resident set measured just before the first call (TensorFlow's
own ~0.5 GB and the weights are the baseline). `tf.config.experimental.get_memory_info` reports
zeros on CPU, hence the resident set.
"""

import resource

# Bytes of float32.
FLOAT_BYTES = 4
# Attention-sized tensors alive at the peak of forward + backward (logits, masked logits, weights,
# their gradients), and model-width activations ([batch, length, width] tensors) at the same time.
ATTENTION_COPIES = 4
ACTIVATION_COPIES = 32


def current_rss_mb():
    """Resident set of this process now, in MiB (from /proc/self/statm)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def peak_rss_mb():
    """Peak resident set of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def estimated_gb(cost, shape, layers=1):
    """Estimated memory (GB) of forward + backward over `layers` layers of `cost` on `shape`."""
    activations = shape.batch * shape.length * shape.width
    elements = ATTENTION_COPIES * cost.attention_elements + ACTIVATION_COPIES * activations
    return layers * elements * FLOAT_BYTES / 1e9


def over_cap(estimate_gb, cap_gb):
    """A reason to skip (a sentence) when the estimate exceeds the cap, else None."""
    if estimate_gb <= cap_gb:
        return None
    return f"estimated {estimate_gb:.1f} GB exceeds the {cap_gb:g} GB memory cap"
