"""What the numbers were measured on: CPU, cores, memory, load, library versions, matmul rate."""

import importlib.metadata
import os
import platform
import time

import numpy as np

LIBRARIES = ("tensorflow", "keras", "tf-keras", "tf-models-official", "numpy")


def cpu_model():
    """The CPU's model name from /proc/cpuinfo (the platform's processor string elsewhere)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_gb():
    """Total physical memory in GB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9


def load_average():
    """1-minute load average (other work on the machine while measuring)."""
    return os.getloadavg()[0]


def versions(libraries=LIBRARIES):
    """{library: version} of the libraries the numbers depend on (absent ones omitted)."""
    found = {"python": platform.python_version()}
    for name in libraries:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def describe(libraries=LIBRARIES):
    """The machine record stored with every result file (with the versions of `libraries`)."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": round(memory_gb(), 1),
        "platform": platform.platform(),
        "versions": versions(libraries),
    }


def operands(size):
    """The two float32 [size, size] matrices every backend's matmul rate multiplies."""
    rng = np.random.default_rng(0)
    return [rng.standard_normal((size, size)).astype(np.float32) for _ in range(2)]


def matmul_rate(size=2048, repeats=10, product=None):
    """Best GFLOP/s of a float32 [size, size] @ [size, size] matmul (2 size^3 FLOPs) over
    `repeats` timed calls of `product(size)` (a blocking call; by default the matmul of this
    process's Keras backend): the machine's dense rate, least disturbed by other work."""
    if product is None:
        from arena_tf.benchmark import backends

        product = backends.current().matmul_product
    call = product(size)
    call()  # trace and warm up
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return 2 * size**3 / min(seconds) / 1e9


def measure_matmul(spec):
    """Child-process entry: the best rate over square sizes up to spec["size"] (1024 to it), with
    the matmul of the process's Keras backend, and the device it ran on where the backend names
    one (`device_record`)."""
    from arena_tf.benchmark import backends

    measurer = backends.current()
    sizes = sorted({min(1024, spec["size"]), min(2048, spec["size"]), spec["size"]})
    rates = {size: matmul_rate(size, spec.get("repeats", 10), measurer.matmul_product)
             for size in sizes}
    best = max(rates, key=rates.get)
    return {"gflops": rates[best], "size": best, "by_size": rates, "load": load_average(),
            **measurer.device_record()}


def run_record(benchmark, options, libraries=LIBRARIES):
    """The header of a results file: machine (with the versions of `libraries`), options
    (JSON-safe), start time and load."""
    shown = {key: value if isinstance(value, (int, float, str, bool, list, tuple, type(None)))
             else str(value)
             for key, value in vars(options).items() if key not in ("command", "run")}
    return {"benchmark": benchmark, "machine": describe(libraries), "options": shown,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "load_start": load_average()}
