"""Inference runtimes behind one small interface, found by name in a registry.

    runtime = runtimes.get("onnxruntime")(path, precision="fp32", device="cpu")
    runtime.load()                           # raises Unsupported for a combination that cannot run
    logits = runtime.predict((tokens,))      # int32 [batch, max_len] arrays ->
                                             # float32 [batch, classes]
    runtime.describe()                       # {"runtime", "precision", "device", "providers"}

Each runtime names the artifact it reads for each precision (the export contract). A combination
that cannot run as asked (CUDA without a GPU, TensorRT absent, a missing artifact, bf16 in ONNX) is
reported as `Unsupported`, never run on something else: ONNX Runtime's session providers are checked
after the session is created, since ONNX Runtime falls back to the CPU silently.
"""

import pathlib

import numpy as np

from arena_tf import cli
from arena_tf import precision as precisions
from arena_tf.export import metadata as export_metadata
from arena_tf.export.contract import (
    ONNX_ARTIFACTS,
    OPENVINO_ARTIFACTS,
    SAVED_MODEL_ARTIFACTS,
    STABLEHLO_ARTIFACTS,
)
from arena_tf.serving import artifacts
from arena_tf.serving.registry import Registry

PRECISIONS = precisions.NAMES
DEVICES = ("cpu", "gpu")

RUNTIMES = Registry("runtime", sort=True)
register, available, get = RUNTIMES.register, RUNTIMES.available, RUNTIMES.get


class Unsupported(RuntimeError):
    """This runtime cannot run this artifact, precision or device here; the message says why."""


def add_arguments(parser, runtime_default=None):
    """--runtime (required unless `runtime_default`), --precision and --device, as the commands
    that load one artifact take them."""
    parser.add_argument(
        "--runtime", default=runtime_default, required=runtime_default is None, choices=available()
    )
    parser.add_argument("--precision", default="fp32", type=cli.precision, choices=PRECISIONS)
    parser.add_argument("--device", default="cpu", choices=DEVICES)


def artifact_path(run_dir, runtime, precision, device="cpu"):
    """The artifact `runtime` reads for `precision` in `run_dir`; Unsupported when the runtime does
    not run on `device`, the contract has no such artifact or the run does not hold it."""
    cls = get(runtime)
    if device not in cls.devices:
        raise Unsupported(f"{runtime} runs on {' or '.join(cls.devices)}, not {device}")
    name = cls.artifacts.get(precision)
    if name is None:
        raise Unsupported(
            f"{runtime} has no {precision} artifact in the export contract "
            f"(it reads {', '.join(f'{p}: {n}' for p, n in cls.artifacts.items())})"
        )
    path = pathlib.Path(run_dir) / name
    if not path.exists():
        raise Unsupported(
            f"{path} is missing; expected the run exported for this runtime and "
            f"precision; export it: python {cls.exporter} {run_dir}"
        )
    check_current(path, run_dir, cls.exporter)
    return path


def check_current(path, run_dir, exporter):
    """Unsupported when the artifact `path` was exported from another model.keras than the one
    `run_dir` holds now (the run trained on after its export): serving it would time and score
    the earlier model under this run's name. Artifacts whose metadata records no source digest
    (exported before it was recorded) are not checked."""
    recorded = artifacts.read_metadata(path).get("source_sha256")
    model = pathlib.Path(run_dir) / "model.keras"
    if recorded and model.is_file() and recorded != export_metadata.source_digest(model):
        raise Unsupported(
            f"{path} was exported from an earlier {model} (the run trained on "
            "since); expected artifacts exported from the run's current model; "
            f"export it again: python {exporter} {run_dir}"
        )


class Runtime:
    """Loads one exported artifact and predicts batches of token arrays.

    Subclasses set `artifacts` ({precision: file or folder name in a run directory}), `devices`
    (where they can run), `exporter` (the script that writes their artifacts), and implement
    `_load` and `predict`.
    """

    name = None
    artifacts = {}
    devices = DEVICES
    exporter = None

    def __init__(self, path, precision="fp32", device="cpu", metadata=None):
        self.path = pathlib.Path(path)
        self.precision = precision
        self.device = device
        self.metadata = metadata or {}
        self.providers = []

    def load(self):
        """Make the model ready to predict; Unsupported if it cannot run as asked."""
        if self.device not in self.devices:
            raise Unsupported(f"{self.name} runs on {' or '.join(self.devices)}, not {self.device}")
        self._load()
        return self

    def _load(self):
        raise NotImplementedError

    def predict(self, inputs):
        """Float32 logits [batch, classes] for a tuple of int32 arrays, one per model input."""
        raise NotImplementedError

    def describe(self):
        return {
            "runtime": self.name,
            "precision": self.precision,
            "device": self.device,
            "providers": list(self.providers),
        }

    def input_names(self, available_names):
        """The model's input names in the order of the instances' inputs (metadata order when
        the metadata names them, else sorted)."""
        named = [n for n in self.metadata.get("input_names", []) if n in available_names]
        return named if len(named) == len(available_names) else sorted(available_names)

    def output_name(self, available_names):
        """The logits output: the metadata's `output_name`, or the only output there is."""
        wanted = self.metadata.get("output_name")
        if wanted in available_names:
            return wanted
        if len(available_names) == 1:
            return next(iter(available_names))
        raise ValueError(
            f"{self.path}: cannot tell the logits among outputs "
            f"{sorted(available_names)}; expected one named {wanted or 'logits'}"
        )


@register("tf")
class TensorFlowRuntime(Runtime):
    """A TensorFlow SavedModel's `serving_default` signature (FP32, or the bf16 / fp16 exports,
    which compute in reduced precision inside and keep int32 in, float32 out)."""

    artifacts = SAVED_MODEL_ARTIFACTS
    exporter = "export/to_savedmodel.py"

    def _load(self):
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        if self.device == "gpu" and not gpus:
            raise Unsupported(
                "TensorFlow sees no GPU: tensorflow[and-cuda] (the gpu extra, "
                'pip install -e ".[gpu]") is missing or no GPU is visible'
            )
        for gpu in gpus:  # take memory as needed, so peak GPU memory means something
            tf.config.experimental.set_memory_growth(gpu, True)
        self.function = tf.saved_model.load(str(self.path)).signatures["serving_default"]
        self.inputs = self.input_names(set(self.function.structured_input_signature[1]))
        self.output = self.output_name(set(self.function.structured_outputs))
        self.providers = [d.name for d in tf.config.list_logical_devices(self.device.upper())]
        self._tf = tf

    def predict(self, inputs):
        feed = {name: self._tf.constant(x) for name, x in zip(self.inputs, inputs)}
        return np.asarray(self.function(**feed)[self.output], dtype=np.float32)


@register("onnxruntime")
class OnnxRuntime(Runtime):
    """An ONNX model in ONNX Runtime on the device's execution provider."""

    artifacts = ONNX_ARTIFACTS
    exporter = "export/to_onnx.py"
    provider_of_device = {"cpu": "CPUExecutionProvider", "gpu": "CUDAExecutionProvider"}
    devices = tuple(provider_of_device)

    def _load(self):
        import onnxruntime as ort

        wanted = self.provider_of_device[self.device]
        present = ort.get_available_providers()
        if wanted not in present:
            raise Unsupported(
                f"{wanted} is not in this onnxruntime build (it has "
                f"{', '.join(present)}); install onnxruntime-gpu (the gpu extra, "
                "in place of onnxruntime), see docs/guide/jax-and-gpu.md"
            )
        self.session = ort.InferenceSession(str(self.path), providers=[wanted])
        self.providers = self.session.get_providers()
        if self.providers[0] != wanted:
            raise Unsupported(
                f"ONNX Runtime could not create {wanted} (the session fell back to "
                f"{', '.join(self.providers)}); see the worker log for the cause"
            )
        self.inputs = self.input_names({i.name for i in self.session.get_inputs()})
        self.output = self.output_name({o.name for o in self.session.get_outputs()})

    def predict(self, inputs):
        feed = dict(zip(self.inputs, inputs))
        return np.asarray(self.session.run([self.output], feed)[0], dtype=np.float32)


@register("openvino")
class OpenVinoRuntime(Runtime):
    """An OpenVINO IR on OpenVINO's CPU plugin, computing in the precision asked for
    (INFERENCE_PRECISION_HINT, read back after compiling: arena_tf/export/openvino_model.py). fp32
    reads openvino/, fp16 the float16-weight IR openvino_fp16/ and computes in float16 where
    OpenVINO does so on this CPU; elsewhere fp16 is unsupported, never run in another precision."""

    artifacts = OPENVINO_ARTIFACTS
    devices = ("cpu",)
    exporter = "export/to_openvino.py"

    def _load(self):
        from arena_tf.export import openvino_model  # OpenVINO: an optional extra, heavy to import

        try:
            self.compiled = openvino_model.compile_ir(self.path, self.precision)
        except openvino_model.PrecisionUnavailable as error:
            raise Unsupported(str(error)) from None
        self.inputs = self.input_names(set(self.compiled.input_names))
        self.providers = [self.compiled.describe()]

    def predict(self, inputs):
        return self.compiled.predict(inputs, self.inputs)


@register("xla")
class XlaRuntime(Runtime):
    """A StableHLO artifact (export/to_stablehlo.py) compiled by XLA through JAX alone (no Keras,
    TensorFlow or model code), on the CPU or a GPU, in the precision its module computes in
    (checked when loading: arena_tf/export/stablehlo_model.py); batches are padded to powers of two,
    whose executables are compiled when loading."""

    artifacts = STABLEHLO_ARTIFACTS
    exporter = "export/to_stablehlo.py"

    def _load(self):
        from arena_tf.export import stablehlo_model  # JAX: an optional extra, heavy to import

        try:
            self.compiled = stablehlo_model.load(self.path, self.precision, self.device)
        except stablehlo_model.Unavailable as error:
            raise Unsupported(str(error)) from None
        self.providers = [self.compiled.describe()]

    def predict(self, inputs):
        return self.compiled.predict(inputs)


@register("tensorrt")
class TensorRTRuntime(OnnxRuntime):
    """The ONNX model in ONNX Runtime's TensorRT execution provider (GPU only)."""

    provider_of_device = {"gpu": "TensorrtExecutionProvider"}
    devices = ("gpu",)
