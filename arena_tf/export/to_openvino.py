"""OpenVINO IR of a trained classifier, converted by OpenVINO from its FP32 SavedModel.

    python export/to_openvino.py RUN_DIR [--precision fp32 fp16] [--examples 256]

Writes RUN_DIR/openvino/ (FP32 weights) and RUN_DIR/openvino_fp16/ (weights stored in float16,
`openvino.save_model(..., compress_to_fp16=True)`), each holding model.xml, model.bin and the
arena_tf metadata (arena_tf.json), with a parity report `<artifact>.parity.json` beside it. The
IR is `openvino.convert_model` of the SavedModel's `serving_default` signature: int32 `tokens`
(`tokens_1`, `tokens_2` for two towers) [batch, length] -> float32 logits [batch, num_classes], the
same length handling as the SavedModel (arena_tf/export/contract.py). RUN_DIR/saved_model/ is
exported first when it is missing or older than model.keras.

Parity runs each IR in OpenVINO on the CPU computing in float32 (INFERENCE_PRECISION_HINT f32,
checked after compiling: arena_tf/export/openvino_model.py), against the Keras model as every export
is judged (arena_tf/export/parity.py): FP32 within 1e-4; the FP16 IR by the margin rule at float16's
unit roundoff (its weights are float16; what the CPU computes in is chosen when serving, see
arena_tf/serving/runtimes.py). Exit status 0 when the FP32 IR was written (or, without fp32 in
--precision, when anything was), 1 when the export failed, 2 for a wrong argument or input.
"""

import sys
import time

if (
    __name__ == "__main__"
):  # `python export/to_openvino.py` or `python -m arena_tf.export.to_openvino`
    from arena_tf.cli import prepare_process

    prepare_process()  # before TensorFlow and Keras are imported

from arena_tf.export import cli  # noqa: E402
from arena_tf.export.contract import (  # noqa: E402
    OPENVINO_ARTIFACTS,
    check_artifact_precision,
    input_names,
)
from arena_tf.export.errors import ExportError, ExportUsageError, one_line  # noqa: E402
from arena_tf.export.metadata import OPENVINO_MODEL, build_metadata, write_openvino_metadata  # noqa: E402
from arena_tf.export.openvino_model import compile_ir  # noqa: E402
from arena_tf.export.parity import contract_checks, parity_report  # noqa: E402
from arena_tf.export.publish import publish  # noqa: E402
from arena_tf.export.runners import openvino_predictor, run_batched  # noqa: E402
from arena_tf.export.to_savedmodel import ARTIFACTS as SAVED_MODELS  # noqa: E402
from arena_tf.export.to_savedmodel import export_converted  # noqa: E402

ARTIFACTS = OPENVINO_ARTIFACTS
COMPRESS_TO_FP16 = {"fp32": False, "fp16": True}


def require_openvino():
    """The openvino module; a one-line ExportUsageError saying how to install it."""
    try:
        import openvino
    except ImportError:
        raise ExportUsageError(
            "OpenVINO is not installed",
            "the openvino package",
            'pip install -e ".[openvino]" (make test installs it)',
        ) from None
    return openvino


def convert_saved_model(saved_model, config):
    """(the ov.Model of the SavedModel's serving signature, seconds it took)."""
    openvino = require_openvino()
    started = time.perf_counter()
    try:
        model = openvino.convert_model(str(saved_model))
    except Exception as error:  # noqa: BLE001 (any conversion failure becomes one line)
        # OpenVINO raises its own OpConversionFailure, GeneralFailure...
        raise ExportError(
            f"OpenVINO could not convert {saved_model} ({type(error).__name__}: {one_line(error)})",
            "a SavedModel OpenVINO's TensorFlow frontend reads",
            "report the mechanism and this message as a bug",
        ) from None
    found, expected = sorted(i.get_any_name() for i in model.inputs), sorted(input_names(config))
    if found != expected:
        raise ExportError(
            f"OpenVINO named the inputs of {saved_model} {found}",
            f"{expected}",
            "re-export the SavedModel with export/to_savedmodel.py",
        )
    return model, round(time.perf_counter() - started, 3)


def export_openvino_model(context, precision, conversion, saved_model_logits):
    """Write, check and publish the IR of one precision; its parity report."""
    source, arrays = context.source, context.examples.arrays
    target = source.artifact(ARTIFACTS[precision])
    model, seconds = conversion

    def write(tmp):
        tmp.mkdir()
        require_openvino().save_model(
            model, str(tmp / OPENVINO_MODEL), compress_to_fp16=COMPRESS_TO_FP16[precision]
        )
        write_openvino_metadata(tmp, build_metadata(source, precision, "openvino"))

    def check(tmp):
        compiled = compile_ir(tmp, "fp32")
        predict = openvino_predictor(compiled, source.config)
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
            runtime="openvino",
            inference_precision=compiled.precision,
            compiled_on=compiled.describe(),
            conversion_seconds=seconds,
        )

    return publish(target, write, check, prior_seconds=seconds)


def check_openvino_precision(precision):
    return check_artifact_precision(precision, ARTIFACTS, "OpenVINO")


def export_openvino_models(context, precisions=tuple(ARTIFACTS)):
    """{artifact path: parity report}: the FP32 SavedModel when stale, then the IRs, refused
    ones included (report["passed"] False); a ParityError when the FP32 one was refused."""
    precisions = [check_openvino_precision(p) for p in precisions]
    return export_converted(
        context,
        ARTIFACTS,
        precisions,
        lambda saved_model: convert_saved_model(saved_model, context.source.config),
        export_openvino_model,
    )


def export_openvino(path, precisions=tuple(ARTIFACTS), count=None, thresholds=None):
    """Export the run directory or .keras file at `path` to OpenVINO IR; {artifact path: parity
    report}."""
    require_openvino()  # before the model is loaded
    return cli.export_path(
        path, precisions, check_openvino_precision, export_openvino_models, count, thresholds
    )


def main(argv=None):
    """Command line: export RUN_DIR's classifier to OpenVINO IR, with parity reports.

    Args:
        argv: RUN_DIR and the flags of `--help` (default: sys.argv[1:]).

    Exit status:
        0 once the FP32 IR (openvino/) is written, or any IR without fp32 in --precision; 1 or 2
            otherwise, as arena_tf/export/cli.py says.

    Example:
        python export/to_openvino.py runs/listops-performer --precision fp32

    References:
        OpenVINO, github.com/openvinotoolkit/openvino (`openvino.convert_model`).
    """
    return cli.export_command(
        argv,
        script="to_openvino.py",
        doc=__doc__,
        precisions=ARTIFACTS,
        what="IRs",
        export=lambda args: export_openvino(args.path, args.precision, args.examples),
    )


if __name__ == "__main__":
    sys.exit(main())
