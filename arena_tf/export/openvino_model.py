"""An OpenVINO IR (export/to_openvino.py) compiled on the CPU at an inference precision, and proof
that it runs at that precision. Imports no TensorFlow: the serving runtime uses it too.

OpenVINO's CPU plugin picks its own inference precision, and a request it cannot serve silently
becomes another: on this project's CPU (AVX-512 with BF16, no AVX512-FP16 or AMX; OpenVINO
2026.4), when this was written, the default was bfloat16 and an f16 request became bf16. So every
compile names its precision (INFERENCE_PRECISION_HINT) and reads back what the compiled model will
use; a difference is `PrecisionUnavailable`, never a run at another precision.

    compiled = compile_ir("runs/x/openvino", "fp32")   # PrecisionUnavailable if not f32
    logits = compiled.predict([tokens])                 # float32 [batch, classes]
"""

import dataclasses
import pathlib

import numpy as np

MODEL_FILE = "model.xml"
HINTS = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}  # precision -> OpenVINO element type


class PrecisionUnavailable(RuntimeError):
    """OpenVINO would compute in another precision than asked on this CPU."""


@dataclasses.dataclass
class CompiledIR:
    """A compiled IR: the openvino.CompiledModel, the element type it computes in, and whether
    OpenVINO's subgraph fusion was on (False: compiled again without it, see compile_ir)."""

    model: object
    precision: str
    fused: bool = True

    @property
    def input_names(self):
        return [port.get_any_name() for port in self.model.inputs]

    def describe(self):
        """'CPU (f32)', or 'CPU (f32, unfused)'."""
        return f"CPU ({self.precision}{'' if self.fused else ', unfused'})"

    def predict(self, arrays, names=("tokens",)):
        """float32 logits of the only output for int32 arrays, one per input named in `names`."""
        by_name = {port.get_any_name(): port for port in self.model.inputs}
        feed = {by_name[name]: array for name, array in zip(names, arrays)}
        return np.asarray(self.model(feed)[self.model.outputs[0]], dtype=np.float32)


def compile_ir(directory, precision="fp32", device="CPU"):
    """The IR in `directory` compiled on `device` computing in `precision` (a CompiledIR). Where
    OpenVINO's subgraph fusion ("snippets") fails to compile a graph (OpenVINO 2026.4 on bigbird's
    block-sparse attention), the graph is compiled again without it: the same ops in the same
    precision, unfused."""
    import openvino

    core = openvino.Core()
    model = core.read_model(str(pathlib.Path(directory) / MODEL_FILE))
    wanted = HINTS[precision]
    config = {"INFERENCE_PRECISION_HINT": wanted}
    fused = True
    try:
        compiled = core.compile_model(model, device, config)
    except RuntimeError as error:
        if "snippets" not in str(error):
            raise
        compiled = core.compile_model(model, device, {**config, "SNIPPETS_MODE": "DISABLE"})
        fused = False
    used = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
    if used != wanted:
        capabilities = ", ".join(core.get_property(device, "OPTIMIZATION_CAPABILITIES"))
        raise PrecisionUnavailable(
            f"OpenVINO's {device} plugin computes {wanted} as {used} on this machine (its "
            f"capabilities: {capabilities})"
        )
    return CompiledIR(compiled, used, fused)
