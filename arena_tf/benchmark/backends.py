"""The Keras backends the layer benchmark measures under (`layers --backend tensorflow|jax`).

Keras picks its backend once, when it is first imported, from KERAS_BACKEND. The parent of a sweep
has long imported Keras (for the mechanism names), so each measurement runs in a child process
whose environment names the backend (`Backend.environment`); the child then measures with the
backend's module (`current()`), which offers one interface:

    measure_call(call, variables, shape, spec)  # forward, forward + backward: time, memory, FLOPs
    normal(shape, seed)                         # a float32 random input of the backend
    matmul_product(size)                        # a blocking call of a [size, size] matmul
    device_record()                             # {"device": {...}} to store with the matmul rate

A JAX child never imports TensorFlow: nothing on its path does (tests/benchmark checks).
"""

import dataclasses
import importlib
import importlib.util

from arena_tf.benchmark import machine
from arena_tf.cli import UsageError


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str  # the Keras backend (KERAS_BACKEND) and the package it needs
    title: str  # for people
    module: str  # the module measuring under it (the interface above)
    libraries: tuple  # the versions stored with its results (machine.versions)
    install: str  # how to get the package

    @property
    def environment(self):
        """What a child's environment needs to measure under this backend."""
        return {"KERAS_BACKEND": self.name}

    def measurer(self):
        """The module measuring under this backend (imports its framework only when called)."""
        return importlib.import_module(self.module)


BACKENDS = {
    "tensorflow": Backend(
        "tensorflow",
        "TensorFlow",
        "arena_tf.benchmark.tf_measure",
        machine.LIBRARIES,
        'pip install -e ".[tf]"',
    ),
    "jax": Backend(
        "jax",
        "JAX",
        "arena_tf.benchmark.jax_measure",
        ("jax", "jaxlib", "keras", "numpy"),
        'pip install -e ".[jax]"',
    ),
}
DEFAULT = "tensorflow"


def lookup(name):
    """The backend `name`; a one-line usage error when it is not one of BACKENDS or its package
    is not installed."""
    if name not in BACKENDS:
        raise UsageError(
            f"--backend {name} is not a backend the benchmark measures under",
            f"one of {', '.join(BACKENDS)}",
            f"pass --backend {DEFAULT} (the default) or another of those",
        )
    backend = BACKENDS[name]
    if importlib.util.find_spec(backend.name) is None:
        raise UsageError(
            f"--backend {name} needs the {name} package, which is not installed",
            f"{name} importable by this Python",
            f"install it ({backend.install}) or pass --backend {DEFAULT}",
        )
    return backend


def check_in_process(backend, in_process):
    """A usage error when --in-process would measure under another backend than the chosen one:
    this process's Keras backend was fixed when Keras was first imported."""
    import keras  # keras: its backend is fixed at its first import, so only when asked

    here = keras.backend.backend()
    if in_process and here != backend.name:
        raise UsageError(
            f"--in-process measures in this process, whose Keras backend is {here}",
            f"--backend {here} with --in-process (or KERAS_BACKEND={backend.name})",
            f"drop --in-process (each measurement then runs in a child with "
            f"KERAS_BACKEND={backend.name}) or set KERAS_BACKEND={backend.name}",
        )


def current():
    """The measuring module of this process's Keras backend (in a child: the one its parent
    chose through KERAS_BACKEND)."""
    import keras  # keras: its backend is fixed at its first import, so only when asked

    return lookup(keras.backend.backend()).measurer()


def measure_matmul(spec):
    """Child-process entry: the best rate over square sizes up to spec["size"] (1024 to it), with
    the matmul of the process's Keras backend, and the device it ran on where the backend names
    one (`device_record`)."""
    measurer = current()
    sizes = sorted({min(1024, spec["size"]), min(2048, spec["size"]), spec["size"]})
    rates = {
        size: machine.matmul_rate(measurer.matmul_product, size, spec.get("repeats", 10))
        for size in sizes
    }
    best = max(rates, key=rates.get)
    return {
        "gflops": rates[best],
        "size": best,
        "by_size": rates,
        "load": machine.load_average(),
        **measurer.device_record(),
    }
