"""FP32 and FP16 ONNX models of a trained classifier, converted by tf2onnx from its SavedModel.

    python export/to_onnx.py RUN_DIR [--precision fp32 fp16] [--opset 17] [--examples 256]

Writes RUN_DIR/model.onnx (FP32) and RUN_DIR/model.fp16.onnx (float16 compute through
onnxruntime's converter with float32 inputs / outputs, see arena_tf/export/onnx_fp16.py), with the
inputs `tokens` (or `tokens_1`, `tokens_2`) int32 [batch, length] and the output `logits` float32
[batch, num_classes], the axes named `batch` and `length` (length up to max_len where the model
has a padding id, padded inside; fixed to max_len otherwise), metadata under the metadata_props
key `arena_tf` and a parity report `<artifact>.parity.json` (Keras, SavedModel and ONNX Runtime on
the same examples, with the providers the session ran on). Every file passes
`onnx.checker.check_model(full_check=True)`. RUN_DIR/saved_model/ is exported first when it is
missing or older than model.keras.

FP32 is written when its logits match Keras, FP16 when it passes its margin-based check
(arena_tf/export/parity.py); a refused FP16 model is reported in one line with its figures. Exit
status 0 when the FP32 model was written (or, without fp32 in --precision, when anything was), 1
when the export failed, 2 for a wrong argument or input.
"""

import contextlib
import dataclasses
import os
import sys
import time

if __name__ == "__main__":
    from arena_tf.cli import prepare_process

    prepare_process()  # before TensorFlow and Keras are imported

import onnx  # noqa: E402
import tf2onnx  # noqa: E402
from tf2onnx import tf_loader  # noqa: E402

from arena_tf.export import cli  # noqa: E402
from arena_tf.export.contract import ONNX_ARTIFACTS, check_artifact_precision  # noqa: E402
from arena_tf.export.errors import ExportError, ExportUsageError, one_line  # noqa: E402
from arena_tf.export.metadata import build_metadata, set_onnx_metadata  # noqa: E402
from arena_tf.export.onnx_fp16 import convert_to_fp16  # noqa: E402
from arena_tf.export.parity import contract_checks, parity_report  # noqa: E402
from arena_tf.export.publish import publish  # noqa: E402
from arena_tf.export.runners import (  # noqa: E402
    onnx_predictor,
    onnx_session,
    run_batched,
)
from arena_tf.export.signature import (  # noqa: E402
    BATCH_AXIS_NAME,
    LENGTH_AXIS_NAME,
    OUTPUT_NAME,
    SIGNATURE_NAME,
    input_names,
    sequence_length,
)
from arena_tf.export.to_savedmodel import ARTIFACTS as SAVED_MODELS  # noqa: E402
from arena_tf.export.to_savedmodel import export_converted  # noqa: E402

ARTIFACTS = ONNX_ARTIFACTS
DEFAULT_OPSET = 17
MIN_OPSET = 13  # checked 13 to 18; at 10, dynamic Pad (local, reformer blocks) is not valid ONNX
MAX_OPSET = max(tf2onnx.constants.OPSET_TO_IR_VERSION)
# How each precision's model is made from the FP32 conversion.
DERIVE = {"fp32": lambda model_proto: model_proto, "fp16": convert_to_fp16}


def unconverted_ops(model_proto):
    """'Op (node name)' for every node tf2onnx left in a domain ONNX does not define."""
    return [
        f"{node.op_type} ({node.name})"
        for node in model_proto.graph.node
        if not onnx.defs.has(node.op_type, node.domain)
    ]


def name_axes(model_proto, config):
    """Name the dynamic first axis of every graph input and output `batch`, and the dynamic
    second axis of the inputs `length` (where the model takes shorter inputs)."""
    for value in (*model_proto.graph.input, *model_proto.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = BATCH_AXIS_NAME
    if sequence_length(config)["dynamic"]:
        for value in model_proto.graph.input:
            value.type.tensor_type.shape.dim[1].dim_param = LENGTH_AXIS_NAME
    return model_proto


def check_names(model_proto, config, saved_model):
    """The ONNX graph's inputs and output must carry the signature's names."""
    found = ([i.name for i in model_proto.graph.input], [o.name for o in model_proto.graph.output])
    expected = (input_names(config), [OUTPUT_NAME])
    if found != expected:
        raise ExportError(
            f"tf2onnx named the inputs / outputs of {saved_model} {found}",
            f"{expected}",
            "re-export the SavedModel with export/to_savedmodel.py",
        )


@contextlib.contextmanager
def native_stderr_silenced():
    """Send what native code writes on file descriptor 2 to /dev/null inside the block:
    TensorFlow's grappler, run by tf2onnx, logs `I0000 ... single_machine.cc] Starting new
    session` lines through absl, which TF_CPP_MIN_LOG_LEVEL does not reach. Failures still
    arrive as Python exceptions; ARENA_TF_DEBUG=1 keeps the native log."""
    if os.environ.get("ARENA_TF_DEBUG"):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def convert_saved_model(saved_model, config, opset=DEFAULT_OPSET):
    """The FP32 ONNX ModelProto of a SavedModel's serving signature, converted by tf2onnx."""
    try:
        with native_stderr_silenced():
            graph_def, inputs, outputs, renames = tf_loader.from_saved_model(
                str(saved_model),
                None,
                None,
                tag=["serve"],
                signatures=[SIGNATURE_NAME],
                return_tensors_to_rename=True,
            )
            model_proto, _ = tf2onnx.convert.from_graph_def(
                graph_def,
                input_names=inputs,
                output_names=outputs,
                opset=opset,
                tensors_to_rename=renames,
            )
    except Exception as error:  # noqa: BLE001 (any conversion failure becomes one line)
        # tf2onnx raises ValueError, KeyError, TF errors... per failing op
        raise ExportError(
            f"tf2onnx could not convert {saved_model} at opset {opset} ({type(error).__name__}: "
            f"{one_line(error)})",
            "a graph tf2onnx converts",
            "report the mechanism and this message as a bug",
        ) from None
    missing = unconverted_ops(model_proto)
    if missing:
        raise ExportError(
            f"tf2onnx could not convert {len(missing)} TensorFlow op(s) of {saved_model} to ONNX "
            f"opset {opset}: {', '.join(missing[:5])}",
            "only ops ONNX defines",
            "the layer using them needs ONNX-friendly ops",
        )
    check_names(model_proto, config, saved_model)
    return name_axes(model_proto, config)


@dataclasses.dataclass
class Conversion:
    """The FP32 ONNX model tf2onnx made from the SavedModel, at which opset and in how long."""

    model_proto: onnx.ModelProto
    opset: int
    seconds: float


def timed_conversion(saved_model, config, opset):
    started = time.perf_counter()
    model_proto = convert_saved_model(saved_model, config, opset)
    return Conversion(model_proto, opset, round(time.perf_counter() - started, 3))


def export_onnx_model(context, precision, conversion, saved_model_logits):
    """Write, check and publish the ONNX model of one precision; its parity report."""
    source, arrays = context.source, context.examples.arrays
    target = source.artifact(ARTIFACTS[precision])

    def write(tmp):
        model_proto = DERIVE[precision](conversion.model_proto)
        model_proto = set_onnx_metadata(model_proto, build_metadata(source, precision, "onnx"))
        check_graph(model_proto, target)
        onnx.save(model_proto, str(tmp))

    def check(tmp):
        session = onnx_session(str(tmp))
        predict = onnx_predictor(session, source.config)
        logits = run_batched(predict, arrays)
        contract = contract_checks(
            predict, arrays, source.config, context.thresholds.contract_max_abs_diff
        )
        return parity_report(
            target.name,
            precision,
            logits,
            context.reference,
            {SAVED_MODELS["fp32"]: saved_model_logits},
            context.thresholds,
            extra_checks=contract,
            runtime="onnxruntime",
            providers=session.get_providers(),
            opset=conversion.opset,
            tf2onnx_seconds=conversion.seconds,
        )

    return publish(target, write, check, prior_seconds=conversion.seconds)


def check_graph(model_proto, target):
    """ONNX's full checker (topological order, types, shapes) on a model about to be written."""
    try:
        onnx.checker.check_model(model_proto, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise ExportError(
            f"{target.name} fails onnx.checker.check_model(full_check=True) ({one_line(error)})",
            "a valid ONNX graph",
            "report the mechanism and this message as a bug",
        ) from None


def check_opset(opset):
    """`opset` if tf2onnx and our graphs support it; a one-line ExportUsageError otherwise."""
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ExportUsageError(
            f"opset {opset} is not supported",
            f"{MIN_OPSET} to {MAX_OPSET} (tf2onnx {tf2onnx.__version__})",
            f"pass --opset {DEFAULT_OPSET} or leave it out",
        )
    return opset


def check_onnx_precision(precision):
    return check_artifact_precision(precision, ARTIFACTS, "ONNX")


def export_onnx_models(context, precisions=tuple(ARTIFACTS), opset=DEFAULT_OPSET):
    """{artifact path: parity report}: the FP32 SavedModel when stale, then the ONNX models,
    refused ones included (report["passed"] False); a ParityError when an FP32 one was refused."""
    opset = check_opset(opset)
    precisions = [check_onnx_precision(p) for p in precisions]
    return export_converted(
        context,
        ARTIFACTS,
        precisions,
        lambda saved_model: timed_conversion(saved_model, context.source.config, opset),
        export_onnx_model,
    )


def export_onnx(
    path, precisions=tuple(ARTIFACTS), opset=DEFAULT_OPSET, count=None, thresholds=None
):
    """Export the run directory or .keras file at `path` to ONNX; {artifact path: parity report}."""
    check_opset(opset)  # before the model is loaded
    return cli.export_path(
        path, precisions, check_onnx_precision, export_onnx_models, count, thresholds, opset=opset
    )


def main(argv=None):
    """Command line: export RUN_DIR's classifier to FP32 / FP16 ONNX, with parity reports.

    Args:
        argv: RUN_DIR, then --precision, --opset, --examples or --debug (default: sys.argv[1:]).

    Exit status:
        0 once model.onnx is written (without fp32 in --precision: once any model is); else 1,
            or 2 for a wrong argument or input, as arena_tf/export/cli.py says.

    Example:
        python export/to_onnx.py runs/listops-performer --precision fp32

    References:
        ONNX, onnx.ai and github.com/onnx/onnx; tf2onnx, github.com/onnx/tensorflow-onnx.
    """
    opset = {"type": int, "default": DEFAULT_OPSET, "help": f"ONNX opset (default {DEFAULT_OPSET})"}
    return cli.export_command(
        argv,
        script="to_onnx.py",
        doc=__doc__,
        precisions=ARTIFACTS,
        what="ONNX models",
        options={"--opset": opset},
        export=lambda args: export_onnx(args.path, args.precision, args.opset, args.examples),
    )


if __name__ == "__main__":
    sys.exit(main())
