"""Memory: the process's resident set (current and peak), the estimate behind the skip rule, and
what a row's peak figure is (`PEAK_SOURCES`).

Each configuration runs in a fresh process, so its peak resident set is its own; what it adds is
reported as the peak above the resident set measured just before the first call (TensorFlow's
own ~0.5 GB and the weights are the baseline). `tf.config.experimental.get_memory_info` reports
zeros on CPU, hence the resident set. Under JAX the figure is the device's peak, or XLA's memory
analysis of the compiled call where the device keeps no statistics (`jax_measure`); each stage
then names its "peak_source".
"""

import os
import resource

# Bytes of float32.
FLOAT_BYTES = 4
# Attention-sized tensors alive at the peak of forward + backward (logits, masked logits, weights,
# their gradients), and model-width activations ([batch, length, width] tensors) at the same time.
ATTENTION_COPIES = 4
ACTIVATION_COPIES = 32
# A stage's "peak_source" -> (its console text, what its tables' heading says the MB are). Stages
# without one (TensorFlow's) are the resident set.
RESIDENT_SET = "resident_set"
PEAK_SOURCES = {
    RESIDENT_SET: ("peak +{:7.0f} MB", "MB above baseline"),
    "xla_memory_analysis": (
        "peak {:7.0f} MB (XLA memory analysis)",
        "MB: XLA's memory analysis of the compiled executable, arguments + outputs + temporaries",
    ),
    "device_peak_bytes_in_use": (
        "peak {:7.0f} MB (device peak)",
        "MB: the device's peak_bytes_in_use",
    ),
}


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


def available_gb():
    """Memory this machine can give a new allocation now, in GB (/proc/meminfo's MemAvailable;
    the physical total where it is missing)."""
    try:
        with open("/proc/meminfo") as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo)
        return int(fields["MemAvailable"].split()[0]) * 1024 / 1e9
    except (OSError, KeyError, ValueError):
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9


def over_cap(estimate_gb, cap_gb, available=None):
    """A reason to skip (a sentence) when the estimate exceeds the cap or the memory available on
    this machine (which the kernel would end by killing the process), else None."""
    if estimate_gb > cap_gb:
        return f"estimated {estimate_gb:.1f} GB exceeds the {cap_gb:g} GB memory cap"
    available = available_gb() if available is None else available
    if estimate_gb > available:
        return (
            f"estimated {estimate_gb:.1f} GB exceeds the {available:.1f} GB of memory "
            "available on this machine"
        )
    return None


def peak_source(stats):
    """What the "peak_mb" of a stage's statistics is (a key of PEAK_SOURCES)."""
    return stats.get("peak_source", RESIDENT_SET)


def describe_peak(stats):
    """The console text of a stage's peak memory."""
    return PEAK_SOURCES[peak_source(stats)][0].format(stats["peak_mb"])


def peak_heading(rows, stage="train"):
    """What the peak memory of `rows` is, for a table heading ("MB above baseline" unless the
    rows were measured otherwise)."""
    sources = {peak_source(row[stage]) for row in rows if row.get(stage)} or {RESIDENT_SET}
    return "; ".join(PEAK_SOURCES[source][1] for source in sorted(sources))
