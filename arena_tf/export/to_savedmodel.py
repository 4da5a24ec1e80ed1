"""SavedModels of a trained classifier in FP32, BF16 and FP16 compute, each checked for parity.

    python export/to_savedmodel.py RUN_DIR [--precision fp32 bf16 fp16] [--examples 256]
    python export/to_savedmodel.py path/to/model.keras      # artifacts beside the file

Writes RUN_DIR/saved_model/ (FP32), saved_model_bf16/ and saved_model_fp16/ (the model rebuilt
under Keras's mixed_bfloat16 / mixed_float16 policy with the trained weights), each with the
signatures `serving_default` (int32 ids) and `serving_int64` (int64 ids): `tokens` [batch, length]
(`tokens_1`, `tokens_2` for two towers) -> float32 `logits` [batch, num_classes], length up to
max_len where the model has a padding id (padded inside), exactly max_len otherwise; metadata in
assets.extra/arena_tf.json and a parity report `<artifact>.parity.json` beside it. The export is
built with Keras 3's ExportArchive and explicit input signatures. The state-space mixers are traced
in their export form (`arena_tf.layers.long_conv.export_form`: their FFT convolutions and scans as
depthwise convolutions), which the parity checks compare with the Keras model's FFT form.

Each precision is judged on its own (arena_tf/export/parity.py): FP32 is written when its logits
match Keras, each reduced precision when it passes its margin-based check; a refused one is reported
in one line with its figures and `<artifact>.parity.failed.json`. Exit status 0 when the FP32
SavedModel was written (or, without fp32 in --precision, when anything was), 1 when the export
failed, 2 for a wrong argument or input.
"""

import functools
import sys

if (
    __name__ == "__main__"
):  # `python export/to_savedmodel.py` or `python -m arena_tf.export.to_savedmodel`
    from arena_tf.cli import prepare_process

    prepare_process()  # before TensorFlow and Keras are imported

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from arena_tf.export import cli  # noqa: E402
from arena_tf.export.contract import SAVED_MODEL_ARTIFACTS  # noqa: E402
from arena_tf.export.errors import ExportError, ExportUsageError, one_line  # noqa: E402
from arena_tf.export.metadata import (  # noqa: E402
    FORMAT_VERSION,
    build_metadata,
    read_metadata,
    write_saved_model_metadata,
)
from arena_tf.export.parity import contract_checks, parity_report  # noqa: E402
from arena_tf.export.precision import POLICIES, check_precision, model_for  # noqa: E402
from arena_tf.export.publish import (  # noqa: E402
    check_places,
    clean_leftovers,
    publish,
    publish_all,
    require_fp32,
)
from arena_tf.export.runners import keras_predictor, run_batched, saved_model_predictor  # noqa: E402
from arena_tf.export.signature import (  # noqa: E402
    INT64_SIGNATURE_NAME,
    OUTPUT_NAME,
    SIGNATURE_NAME,
    input_specs,
    model_inputs,
    to_model_length,
)
from arena_tf.layers import long_conv  # noqa: E402

ARTIFACTS = SAVED_MODEL_ARTIFACTS


def write_saved_model(model, config, directory):
    """A SavedModel of `model` with the serving signatures (int32 and int64 ids), written to
    `directory`. Traced in the layers' export form: long convolutions without FFT (ONNX has
    none)."""
    with long_conv.export_form():
        trace_saved_model(model, config, directory)


def trace_saved_model(model, config, directory):
    archive = keras.export.ExportArchive()
    archive.track(model)

    def serve(*tokens):
        tokens = [to_model_length(t, config) for t in tokens]
        return {OUTPUT_NAME: model(model_inputs(tokens), training=False)}

    serve_int32 = archive.add_endpoint(
        SIGNATURE_NAME, serve, input_signature=input_specs(config, tf.int32)
    )

    def serve_int64(*tokens):  # calls the int32 function: the model is traced once
        return serve_int32(*[tf.cast(t, tf.int32) for t in tokens])

    archive.add_endpoint(
        INT64_SIGNATURE_NAME, serve_int64, input_signature=input_specs(config, tf.int64)
    )
    archive.write_out(str(directory), verbose=False)


def export_saved_model(context, precision):
    """Write, check and publish the SavedModel of one precision; its parity report."""
    source, arrays = context.source, context.examples.arrays
    model, target = model_for(context, precision), source.artifact(ARTIFACTS[precision])

    def write(tmp):
        write_saved_model(model, source.config, tmp)
        write_saved_model_metadata(tmp, build_metadata(source, precision))

    def check(tmp):
        loaded = tf.saved_model.load(str(tmp))
        predict = saved_model_predictor(loaded, source.config)
        logits = run_batched(predict, arrays)
        same_precision = (
            {}
            if precision == "fp32"
            else {f"keras_{precision}": run_batched(keras_predictor(model), arrays)}
        )
        contract = contract_checks(
            predict,
            arrays,
            source.config,
            context.thresholds.contract_max_abs_diff,
            predict_int64=saved_model_predictor(loaded, source.config, INT64_SIGNATURE_NAME),
        )
        return parity_report(
            target.name,
            precision,
            logits,
            context.reference,
            same_precision,
            context.thresholds,
            extra_checks=contract,
            runtime="tensorflow",
        )

    return publish(target, write, check)


def saved_model_is_current(source):
    """True when the FP32 SavedModel was exported from this .keras file after its last change,
    in the current format (signatures, length handling)."""
    saved_model = source.artifact(ARTIFACTS["fp32"])
    graph = saved_model / "saved_model.pb"
    if not graph.is_file() or graph.stat().st_mtime < source.model_path.stat().st_mtime:
        return False
    try:
        metadata = read_metadata(saved_model)
        return (
            metadata["source"] == str(source.model_path)
            and metadata.get("format") == FORMAT_VERSION
        )
    except (ExportError, KeyError, ValueError):  # no or unreadable metadata: export anew
        return False


def current_fp32_saved_model(context, reports):
    """(path, tf.saved_model.load of it) of the FP32 SavedModel the other exports convert,
    exported first (its report added to `reports`, a ParityError if refused) when missing or older
    than model.keras; an ExportUsageError when the one kept there cannot be loaded."""
    saved_model = context.source.artifact(ARTIFACTS["fp32"])
    if not saved_model_is_current(context.source):
        reports[saved_model] = export_saved_model(context, "fp32")
        require_fp32(reports, [saved_model])
        return saved_model, tf.saved_model.load(str(saved_model))
    try:  # the one an earlier export kept
        return saved_model, tf.saved_model.load(str(saved_model))
    except Exception as error:  # noqa: BLE001 (a damaged SavedModel fails in many ways)
        # a damaged one: DecodeError, NotFoundError, OSError, ValueError...
        raise ExportUsageError(
            f"cannot load {saved_model} ({type(error).__name__}: {one_line(error)})",
            "the SavedModel an earlier export wrote from this model.keras",
            f"delete {saved_model} and rerun: it is exported again from model.keras",
        ) from None


def export_converted(context, artifacts, precisions, convert, export_one):
    """{artifact path: parity report} of the artifacts converted from the FP32 SavedModel (ONNX,
    OpenVINO): the SavedModel first when stale, `convert(saved_model)` once, then
    `export_one(context, precision, conversion, saved_model_logits)` for each precision, refused
    ones included; a ParityError when an FP32 artifact was refused."""
    source, reports = context.source, {}
    clean_leftovers(source.directory)
    # every target, the FP32 SavedModel they are converted from included, before any is written
    for target in (ARTIFACTS["fp32"], *(artifacts[precision] for precision in precisions)):
        check_places(source.artifact(target))
    saved_model, loaded = current_fp32_saved_model(context, reports)
    conversion = convert(saved_model)
    saved_model_logits = run_batched(
        saved_model_predictor(loaded, source.config), context.examples.arrays
    )
    reports.update(
        publish_all(
            {
                source.artifact(artifacts[p]): functools.partial(
                    export_one, context, p, conversion, saved_model_logits
                )
                for p in precisions
            }
        )
    )
    return require_fp32(reports, [saved_model, source.artifact(artifacts["fp32"])])


def export_saved_models(context, precisions=tuple(ARTIFACTS)):
    """{artifact path: parity report} for the SavedModels of `precisions`, refused ones included
    (report["passed"] False); a ParityError when the FP32 SavedModel was refused."""
    precisions = [check_precision(p) for p in precisions]
    clean_leftovers(context.source.directory)
    reports = publish_all(
        {
            context.source.artifact(ARTIFACTS[p]): functools.partial(export_saved_model, context, p)
            for p in precisions
        }
    )
    return require_fp32(reports, [context.source.artifact(ARTIFACTS["fp32"])])


def export_savedmodel(path, precisions=tuple(ARTIFACTS), count=None, thresholds=None):
    """Export the run directory or .keras file at `path`; {artifact path: parity report}."""
    return cli.export_path(
        path, precisions, check_precision, export_saved_models, count, thresholds
    )


def main(argv=None):
    """Command line: export RUN_DIR's classifier to SavedModels, with parity reports.

    Args:
        argv: the arguments after the script's name, `--help` lists them (default: sys.argv[1:]).

    Exit status:
        0 when saved_model/ was written (or any SavedModel, without fp32 in --precision); 1 when
            the export failed; 2 for a wrong argument or input.

    Example:
        python export/to_savedmodel.py runs/listops-performer --precision fp32

    References:
        TensorFlow SavedModel, tensorflow.org/guide/saved_model; Keras 3 ExportArchive,
            keras.io/api/models/model_saving_apis/export/.
    """
    return cli.export_command(
        argv,
        script="to_savedmodel.py",
        doc=__doc__,
        precisions=ARTIFACTS,
        what="SavedModels",
        choices=POLICIES,
        export=lambda args: export_savedmodel(args.path, args.precision, args.examples),
    )


if __name__ == "__main__":
    sys.exit(main())
