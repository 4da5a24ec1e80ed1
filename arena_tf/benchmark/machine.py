"""What the numbers were measured on: CPU, cores, memory, load, library versions, matmul rate."""

import importlib.metadata
import os
import platform
import subprocess
import time

import numpy as np

from arena_tf.host import cpu_model

LIBRARIES = ("tensorflow", "keras", "tf-keras", "tf-models-official", "numpy")
# Environment variables that set how many threads the math libraries and TensorFlow use.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "TF_ENABLE_ONEDNN_OPTS",
    "KMP_AFFINITY",
    "KMP_BLOCKTIME",
)
# Single-precision floats in one vector register, by the widest vector instruction set; each FMA
# unit does one fused multiply-add (2 FLOPs) per float per cycle, and a core is taken to have 2.
VECTOR_FLOATS = {"avx512f": 16, "avx2": 8}
FMA_UNITS = 2


def memory_gb():
    """Total physical memory in GB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9


def load_average():
    """1-minute load average (other work on the machine while measuring)."""
    return os.getloadavg()[0]


def thread_environment():
    """{variable: value} of the THREAD_VARIABLES that are set."""
    return {name: os.environ[name] for name in THREAD_VARIABLES if name in os.environ}


def parse_lscpu(text):
    """{field: value} of `lscpu`'s "Field: value" lines."""
    fields = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields[key.strip()] = value.strip()
    return fields


def cpu_mhz(fields):
    """The clock in MHz `lscpu` states (its maximum, else the current one), else /proc/cpuinfo's
    current "cpu MHz"; None when neither says."""
    for key in ("CPU max MHz", "CPU MHz"):
        if fields.get(key):
            return float(fields[key])
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    return None


def physical_peak(fields):
    """The float32 peak of the CPU `lscpu`'s `fields` describe: physical cores (cores per socket x
    sockets) x MHz x FLOPs per cycle per core, where FLOPs per cycle = FMA_UNITS (2) x floats per
    vector (16 with avx512f, 8 with avx2) x 2 (a fused multiply-add); with neither, or no clock
    known, gflops is None.

    The MHz is the nominal clock lscpu states (its maximum where it gives one, else the current
    one, which a VM often reports as the base clock): a core running at a boost clock above it,
    or a CPU with more FMA units than assumed, makes the measured matmul rate exceed this peak,
    and a CPU with one FMA unit per core reaches only half of it."""
    flags = set(fields.get("Flags", "").split())
    widest = next((name for name in VECTOR_FLOATS if name in flags), None)
    cores = (
        count(fields, "Core(s) per socket") * (count(fields, "Socket(s)") or 1) or os.cpu_count()
    )
    mhz = cpu_mhz(fields)
    per_cycle = FMA_UNITS * VECTOR_FLOATS[widest] * 2 if widest else None
    gflops = cores * mhz * per_cycle / 1e3 if per_cycle and mhz else None
    return {
        "cores": cores,
        "mhz": mhz,
        "flags": sorted(flags & {"avx2", "avx512f", "fma"}),
        "flops_per_cycle": per_cycle,
        "gflops": gflops,
    }


def count(fields, key):
    """The whole number of an lscpu field; 0 when it is missing or not a number ("-")."""
    value = fields.get(key, "")
    return int(value) if value.isdecimal() else 0


def lscpu_peak():
    """`physical_peak` of this machine's `lscpu`; {"error": ...} where lscpu cannot run."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        return {"error": f"lscpu: {error}"}
    return physical_peak(parse_lscpu(text))


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


def matmul_rate(product, size=2048, repeats=10):
    """Best GFLOP/s of a float32 [size, size] @ [size, size] matmul (2 size^3 FLOPs) over
    `repeats` timed calls of `product(size)` (a blocking call, e.g. a backend's `matmul_product`):
    the machine's dense rate, least disturbed by other work."""
    call = product(size)
    call()  # trace and warm up
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return 2 * size**3 / min(seconds) / 1e9


def run_record(benchmark, options, libraries=LIBRARIES):
    """The header of a results file: machine (with the versions of `libraries`), options
    (JSON-safe), start time and load."""
    shown = {
        key: value
        if isinstance(value, (int, float, str, bool, list, tuple, type(None)))
        else str(value)
        for key, value in vars(options).items()
        if key not in ("command", "run")
    }
    return {
        "benchmark": benchmark,
        "machine": describe(libraries),
        "options": shown,
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_start": load_average(),
    }
