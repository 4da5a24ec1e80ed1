"""A StableHLO artifact (export/to_stablehlo.py) loaded and compiled by XLA through JAX alone, and
proof that it computes in the precision it names. Imports no Keras, no TensorFlow and no model
code of arena_tf: the serving runtime `xla` (arena_tf/serving/runtimes.py) uses it too.

An artifact is a directory:

    model.stablehlo   jax.export's serialization of the inference function `f(weights, *tokens)`:
                      StableHLO, symbolic batch (and length) dimensions, lowered for CPU and CUDA
    weights.npz       the weights, float32, in the order of `weights` (arr_0, arr_1, ...)
    arena_tf.json     the metadata (arena_tf/export/metadata.py), its `stablehlo` section included

    compiled = load("runs/x/stablehlo", "fp32", "cpu")   # Unavailable when it cannot run so
    logits = compiled.predict((tokens,))                   # float32 [batch, classes]

Precision: the module's own types say what it computes in (bf16 or f16 tensors, or float32 only),
and an FP32 module must ask XLA for full-precision products (`precision = [HIGHEST, HIGHEST]` on
every dot and convolution), since XLA on a GPU otherwise multiplies float32 in TF32. A module that
computes in another precision than asked is `PrecisionMismatch`, never run.

Batches are padded (with copies of their first row) to the next power of two, so XLA compiles one
executable per power of two, not one per batch size; `load` compiles them up to `warm_batch` at
once, so no compilation lands in a timed request.
"""

import dataclasses
import json
import os
import pathlib
import re
import sys

import numpy as np

MODEL_FILE = "model.stablehlo"
WEIGHTS_FILE = "weights.npz"
METADATA_FILE = "arena_tf.json"  # arena_tf/export/metadata.py reads and writes it
# jax.export platform names of the devices `load` takes.
PLATFORMS = {"cpu": "cpu", "gpu": "cuda"}
WARM_BATCH = 256
# Element types of float tensors in StableHLO text (`tensor<4x64xbf16>`), by precision.
TENSOR_TYPES = {"bf16": re.compile(r"[x<]bf16>"), "fp16": re.compile(r"[x<]f16>")}
PRODUCT = re.compile(r"stablehlo\.(dot_general|convolution)\b.*")


class Unavailable(RuntimeError):
    """The artifact cannot run as asked here (no such device, a platform it was not lowered for);
    the message says why."""


class PrecisionMismatch(Unavailable):
    """The module computes in another precision than the one asked for."""


def write(directory, exported, weights):
    """Store a jax.export.Exported and its weights (arrays in argument order) in `directory`."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MODEL_FILE).write_bytes(exported.serialize())
    with open(directory / WEIGHTS_FILE, "wb") as out:
        np.savez(out, *[np.asarray(w) for w in weights])


def computes_in(module_text):
    """'bf16' or 'fp16' when the module has tensors of that type, else 'fp32'."""
    found = [name for name, pattern in TENSOR_TYPES.items() if pattern.search(module_text)]
    return found[0] if len(found) == 1 else ("mixed: " + ", ".join(found) if found else "fp32")


def products_below_highest(module_text):
    """The dots and convolutions of the module that do not ask for HIGHEST precision."""
    return [
        m.group(0) for m in PRODUCT.finditer(module_text) if "HIGHEST, HIGHEST" not in m.group(0)
    ]


def check_precision(module_text, precision):
    """`precision` when the module computes in it (FP32: products at HIGHEST too);
    PrecisionMismatch otherwise."""
    found = computes_in(module_text)
    if found != precision:
        raise PrecisionMismatch(
            f"the StableHLO module computes in {found}, not {precision}; "
            "re-export it with export/to_stablehlo.py"
        )
    lower = products_below_highest(module_text) if precision == "fp32" else []
    if lower:
        raise PrecisionMismatch(
            f"{len(lower)} float32 product(s) of the module do not ask for "
            "HIGHEST precision (XLA may compute them in TF32 on a GPU); "
            "re-export it with export/to_stablehlo.py"
        )
    return precision


def configure_jax(device):
    """Before JAX is first imported in this process (a serving process): GPU memory taken as
    needed (so the peak means something), and no GPU touched for `device` 'cpu'."""
    if "jax" in sys.modules:
        return
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if device == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")


def find_device(kind):
    """The first JAX device of `kind` ('cpu' or 'gpu'); Unavailable saying why there is none."""
    import jax

    try:
        return jax.devices(kind)[0]
    except RuntimeError as error:
        raise Unavailable(
            f"JAX sees no {kind.upper()} ({' '.join(str(error).split())[:200]}); "
            "for a GPU install jax with its CUDA plugin, e.g. pip install "
            '"jax[cuda13]"'
        ) from None


def bucket(rows):
    """The power of two at or above `rows`."""
    return 1 << max(0, rows - 1).bit_length()


@dataclasses.dataclass
class CompiledModule:
    """A deserialized artifact bound to one device: its weights on that device and one XLA
    executable per padded batch size and input length (compiled ahead of time, on first use or
    by `warm` for max_len)."""

    exported: object
    weights: list
    device: object
    precision: str
    input_shapes: list

    def __post_init__(self):
        import jax

        self._jax = jax
        self._function = jax.jit(self.exported.call)
        self._executables = {}

    def executable(self, rows, lengths=None):
        """The compiled executable for batches of `rows` rows (a power of two) of `lengths` ids
        (one per input; default max_len)."""
        key = (rows, tuple(lengths or self.input_shapes))
        if key not in self._executables:
            jax = self._jax
            on_device = jax.sharding.SingleDeviceSharding(self.device)
            specs = [
                jax.ShapeDtypeStruct((rows, length), "int32", sharding=on_device)
                for length in key[1]
            ]
            self._executables[key] = self._function.lower(self.weights, *specs).compile()
        return self._executables[key]

    def predict(self, arrays):
        """float32 logits [batch, classes] of int32 arrays [batch, length], one per input."""
        rows = len(arrays[0])
        size = bucket(rows)
        padded = [
            np.concatenate([a, np.repeat(a[:1], size - rows, axis=0)]) if size > rows else a
            for a in arrays
        ]
        run = self.executable(size, [a.shape[1] for a in arrays])
        logits = run(self.weights, *[np.asarray(a, np.int32) for a in padded])
        return np.asarray(logits, dtype=np.float32)[:rows]

    def warm(self, largest=WARM_BATCH):
        """Compile the executables of every padded batch size up to `largest`."""
        size = 1
        while size <= largest:
            self.executable(size)
            size *= 2
        return self

    def describe(self):
        """'cpu:0 (cpu, fp32)', 'cuda:0 (NVIDIA H100 80GB HBM3, bf16)'."""
        return f"{self.device} ({self.device.device_kind}, {self.precision})"


def read_artifact_file(path, read):
    """`read(path)`; a ValueError naming the file and the re-export for a missing or damaged one
    (any failure to read it: a cut or overwritten file fails in many ways)."""
    try:
        return read(path)
    except Exception as error:  # noqa: BLE001 (a damaged file fails in many ways)
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        raise ValueError(
            f"{path} cannot be read ({type(error).__name__}: {first}); re-export it "
            "with export/to_stablehlo.py"
        ) from error


def load(directory, precision, device="cpu", warm_batch=WARM_BATCH):
    """The artifact in `directory` on the JAX device `device` ('cpu' or 'gpu'), checked to compute
    in `precision`, with its executables compiled up to `warm_batch` rows (0: none) for inputs of
    max_len ids; Unavailable when it cannot run so here."""
    configure_jax(device)
    from jax import export

    directory = pathlib.Path(directory)
    exported = read_artifact_file(
        directory / MODEL_FILE, lambda path: export.deserialize(bytearray(path.read_bytes()))
    )
    target = find_device(device)
    if PLATFORMS[device] not in exported.platforms:
        raise Unavailable(
            f"{directory / MODEL_FILE} was lowered for "
            f"{', '.join(exported.platforms)}, not {PLATFORMS[device]}; re-export "
            "it with export/to_stablehlo.py"
        )
    check_precision(exported.mlir_module(), precision)

    def read_weights(path):
        with np.load(path) as stored:
            return [stored[f"arr_{i}"] for i in range(len(stored.files))]

    weights = read_artifact_file(directory / WEIGHTS_FILE, read_weights)
    import jax

    weights = [jax.device_put(w, target) for w in weights]
    max_len = json.loads((directory / METADATA_FILE).read_text())["max_len"]
    lengths = [max_len] * (len(exported.in_avals) - len(weights))
    compiled = CompiledModule(exported, weights, target, precision, lengths)
    return compiled.warm(warm_batch) if warm_batch else compiled
