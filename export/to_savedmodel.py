"""SavedModels of a trained classifier in FP32, BF16 and FP16 compute, each checked for parity.

    python export/to_savedmodel.py RUN_DIR [--precision fp32 bf16 fp16] [--examples 256]
    python export/to_savedmodel.py path/to/model.keras      # artifacts beside the file

Writes RUN_DIR/saved_model/ (FP32), saved_model_bf16/ and saved_model_fp16/ (the model rebuilt
under Keras's mixed_bfloat16 / mixed_float16 policy with the trained weights), each with the
signature `serving_default`: int32 `tokens` [batch, max_len] (`tokens_1`, `tokens_2` for two
towers) -> float32 `logits` [batch, num_classes], metadata in assets.extra/arena_tf.json and a
parity report `<artifact>.parity.json` beside it. The export is built with Keras 3's
ExportArchive and an explicit input signature.
"""

import functools
import os
import pathlib
import sys

if __name__ == "__main__":  # `python export/to_savedmodel.py`: import the package, not this folder
    sys.path[0] = str(pathlib.Path(__file__).resolve().parent.parent)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402

from export import cli  # noqa: E402
from export.context import prepare  # noqa: E402
from export.metadata import build_metadata, write_saved_model_metadata  # noqa: E402
from export.parity import parity_report  # noqa: E402
from export.precision import POLICIES, check_precision, model_in_precision  # noqa: E402
from export.publish import publish, publish_all  # noqa: E402
from export.runners import keras_predictor, run_batched, saved_model_predictor  # noqa: E402
from export.signature import OUTPUT_NAME, SIGNATURE_NAME, input_specs, model_inputs  # noqa: E402

ARTIFACTS = {"fp32": "saved_model", "bf16": "saved_model_bf16", "fp16": "saved_model_fp16"}


def write_saved_model(model, config, directory):
    """A SavedModel of `model` with the serving signature, written to `directory`."""
    archive = keras.export.ExportArchive()
    archive.track(model)

    def serve(*tokens):
        return {OUTPUT_NAME: model(model_inputs(tokens), training=False)}

    archive.add_endpoint(SIGNATURE_NAME, serve, input_signature=input_specs(config))
    archive.write_out(str(directory), verbose=False)


def model_for(context, precision):
    """The Keras model exported at `precision` (the FP32 reference model for fp32)."""
    if precision == "fp32":
        return context.reference.model
    return model_in_precision(context.source.model, context.source.config, precision)


def export_saved_model(context, precision):
    """Write, check and publish the SavedModel of one precision; its parity report."""
    source, arrays = context.source, context.examples.arrays
    model, target = model_for(context, precision), source.artifact(ARTIFACTS[precision])

    def write(tmp):
        write_saved_model(model, source.config, tmp)
        write_saved_model_metadata(tmp, build_metadata(source, precision))

    def check(tmp):
        logits = run_batched(saved_model_predictor(tmp, source.config), arrays)
        same_precision = {} if precision == "fp32" else {
            f"keras_{precision}": run_batched(keras_predictor(model), arrays)
        }
        return parity_report(target.name, precision, logits, context.reference, same_precision,
                             context.thresholds, runtime="tensorflow")

    return publish(target, write, check)


def export_saved_models(context, precisions=tuple(ARTIFACTS)):
    """{artifact path: parity report} for the SavedModels of `precisions`."""
    return publish_all({
        context.source.artifact(ARTIFACTS[p]): functools.partial(export_saved_model, context, p)
        for p in map(check_precision, precisions)
    })


def export_savedmodel(path, precisions=tuple(ARTIFACTS), count=None, thresholds=None):
    """Export the run directory or .keras file at `path`; {artifact path: parity report}."""
    return export_saved_models(prepare(path, count, thresholds), precisions)


def main(argv=None):
    parser = cli.parser("python export/to_savedmodel.py", __doc__)
    parser.add_argument("--precision", nargs="+", choices=list(POLICIES), default=list(ARTIFACTS),
                        help="which SavedModels to write (default: all three)")
    return cli.run(lambda args: export_savedmodel(args.path, args.precision, args.examples), parser,
                   argv)


if __name__ == "__main__":
    sys.exit(main())
