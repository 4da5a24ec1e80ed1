"""StableHLO artifacts of a trained classifier, exported by jax.export, run by XLA with JAX alone.

    python export/to_stablehlo.py RUN_DIR [--precision fp32 bf16 fp16] [--examples 256]

Writes RUN_DIR/stablehlo/ (FP32), stablehlo_bf16/ and stablehlo_fp16/ (the model rebuilt under
Keras's mixed_bfloat16 / mixed_float16 policy with the trained weights), each holding
model.stablehlo (the serialized jax.export.Exported of the inference function), weights.npz (its
float32 weights) and arena_tf.json (the metadata), with a parity report `<artifact>.parity.json`
beside it (arena_tf/export/stablehlo_model.py describes the directory and runs it). The function
takes int32 `tokens` (`tokens_1`, `tokens_2` for two towers) [batch, length] and returns float32
logits [batch, num_classes], as every artifact of the export contract (arena_tf/export/contract.py):
`batch` is a symbolic dimension; `length` is one too (at most max_len, padded inside to max_len with
the padding id) where the model has a padding id, and fixed to max_len otherwise; the metadata's
`stablehlo` section says which. It is lowered for CPU and CUDA; the FP32 module asks for HIGHEST
precision products, so no GPU computes it in TF32.

The script runs Keras on JAX (it sets KERAS_BACKEND=jax): the model.keras of a run trained under
TensorFlow or JAX loads the same. Parity runs each artifact in XLA on the CPU against the Keras
model as every export is judged (arena_tf/export/parity.py): FP32 within 1e-4, also on inputs cut to
half of max_len; bf16 and fp16 by the margin rule. Exit status 0 when the FP32 artifact was written
(or, without fp32 in --precision, when anything was), 1 when the export failed, 2 for a wrong
argument or input.
"""

import os
import sys
import time

if (
    __name__ == "__main__"
):  # `python export/to_stablehlo.py` or `python -m arena_tf.export.to_stablehlo`
    from arena_tf.cli import prepare_process

    os.environ["KERAS_BACKEND"] = "jax"  # jax.export traces the model's JAX function
    prepare_process()  # before TensorFlow and Keras are imported

import functools  # noqa: E402

import jax  # noqa: E402
import keras  # noqa: E402
from jax import export as jax_export  # noqa: E402

from arena_tf.export import cli, stablehlo_model  # noqa: E402
from arena_tf.export.contract import (  # noqa: E402
    BATCH_AXIS_NAME,
    LENGTH_AXIS_NAME,
    STABLEHLO_ARTIFACTS,
    check_artifact_precision,
    input_names,
    model_inputs,
    sequence_length,
)
from arena_tf.export.errors import ExportError, ExportUsageError, one_line  # noqa: E402
from arena_tf.export.metadata import build_metadata, write_directory_metadata  # noqa: E402
from arena_tf.export.parity import contract_checks, parity_report  # noqa: E402
from arena_tf.export.precision import model_for  # noqa: E402
from arena_tf.export.publish import clean_leftovers, publish, publish_all, require_fp32  # noqa: E402
from arena_tf.export.runners import keras_predictor, run_batched, stablehlo_predictor  # noqa: E402

ARTIFACTS = STABLEHLO_ARTIFACTS
PLATFORMS = tuple(stablehlo_model.PLATFORMS.values())
# Full float32 products for FP32 (XLA on a GPU would use TF32); the backend's choice otherwise.
MATMUL_PRECISION = {"fp32": "highest", "bf16": None, "fp16": None}


def require_jax_backend():
    """A one-line ExportUsageError unless Keras runs on JAX in this process."""
    if keras.backend.backend() != "jax":
        raise ExportUsageError(
            f"Keras runs on {keras.backend.backend()} in this process",
            "KERAS_BACKEND=jax (jax.export traces the model's JAX function)",
            "run python export/to_stablehlo.py, which sets it, or set "
            "KERAS_BACKEND=jax before Keras is imported",
        )


def symbolic_dimensions(config):
    """{'batch': name, 'length': name or None}: the symbolic dimensions of the inputs."""
    dynamic = sequence_length(config)["dynamic"]
    lengths = (
        [LENGTH_AXIS_NAME]
        if len(input_names(config)) == 1
        else [f"{LENGTH_AXIS_NAME}_{i + 1}" for i in range(2)]
    )
    return {"batch": BATCH_AXIS_NAME, "length": lengths if dynamic else None}


def token_specs(config):
    """One int32 ShapeDtypeStruct per input: [batch, length] symbolic (length at most max_len),
    or [batch, max_len] where the length is fixed."""
    dims = symbolic_dimensions(config)
    lengths = dims["length"] or []
    shape = jax_export.symbolic_shape(
        ", ".join([dims["batch"], *lengths]),
        constraints=[f"{n} <= {config.max_len}" for n in lengths],
    )
    batch, *symbols = shape
    symbols = symbols or [config.max_len] * len(input_names(config))
    return [jax.ShapeDtypeStruct((batch, length), "int32") for length in symbols]


def to_model_length(tokens, config):
    """int32 ids [batch, max_len]: padded at the end with the padding id where shorter."""
    if tokens.shape[1] == config.max_len:
        return tokens
    padded = jax.numpy.full((tokens.shape[0], config.max_len), config.padding_id, "int32")
    return jax.lax.dynamic_update_slice(padded, tokens, (0, 0))


def inference_function(model, config):
    """f(weights, *tokens) -> float32 logits: the model in inference mode as a pure function of
    its weights (trainable ones first)."""
    trainable = len(model.trainable_variables)

    def serve(weights, *tokens):
        tokens = [to_model_length(t, config) for t in tokens]
        logits, _ = model.stateless_call(
            weights[:trainable], weights[trainable:], model_inputs(tokens), training=False
        )
        return logits.astype("float32")

    return serve


def export_function(model, config, precision):
    """(jax.export.Exported of the model's inference function, its weights as numpy arrays)."""
    weights = [v.numpy() for v in (*model.trainable_variables, *model.non_trainable_variables)]
    specs = [jax.ShapeDtypeStruct(w.shape, w.dtype) for w in weights]
    try:
        with jax.default_matmul_precision(MATMUL_PRECISION[precision]):
            exported = jax_export.export(
                jax.jit(inference_function(model, config)), platforms=PLATFORMS
            )(specs, *token_specs(config))
    except Exception as error:  # noqa: BLE001 (export errors have no common base class)
        # shape polymorphism and lowering errors have no common base
        raise ExportError(
            f"jax.export could not export the {config.attention} model "
            f"({type(error).__name__}: {one_line(error)})",
            "a model JAX traces with a symbolic batch (and length)",
            "report the mechanism and this message as a bug",
        ) from None
    return exported, weights


def stablehlo_metadata(source, precision, exported):
    """The artifact's metadata: the contract's, and how the StableHLO module was made."""
    return {
        **build_metadata(source, precision, "stablehlo"),
        "stablehlo": {
            "symbolic_dimensions": symbolic_dimensions(source.config),
            "platforms": list(exported.platforms),
            "matmul_precision": MATMUL_PRECISION[precision] or "default",
            "calling_convention_version": exported.calling_convention_version,
            "weights": len(exported.in_avals) - len(input_names(source.config)),
            "files": [stablehlo_model.MODEL_FILE, stablehlo_model.WEIGHTS_FILE],
            "jax": jax.__version__,
        },
    }


def export_stablehlo_model(context, precision):
    """Write, check and publish the StableHLO artifact of one precision; its parity report."""
    source, arrays = context.source, context.examples.arrays
    model, target = model_for(context, precision), source.artifact(ARTIFACTS[precision])
    started = time.perf_counter()
    exported, weights = export_function(model, source.config, precision)
    seconds = round(time.perf_counter() - started, 3)

    def write(tmp):
        stablehlo_model.write(tmp, exported, weights)
        write_directory_metadata(tmp, stablehlo_metadata(source, precision, exported))

    def check(tmp):
        try:
            compiled = stablehlo_model.load(tmp, precision, "cpu", warm_batch=0)
        except stablehlo_model.Unavailable as error:
            raise ExportError(
                f"{target.name}: {error}",
                f"a module computing in {precision}",
                "report the mechanism and this message as a bug",
            ) from None
        predict = stablehlo_predictor(compiled, source.config)
        logits = run_batched(predict, arrays)
        same_precision = (
            {}
            if precision == "fp32"
            else {f"keras_{precision}": run_batched(keras_predictor(model), arrays)}
        )
        contract = contract_checks(
            predict, arrays, source.config, context.thresholds.contract_max_abs_diff
        )
        return parity_report(
            target.name,
            precision,
            logits,
            context.reference,
            same_precision,
            context.thresholds,
            extra_checks=contract,
            runtime="xla",
            compiled_on=compiled.describe(),
            platforms=list(exported.platforms),
            jax=jax.__version__,
            jax_export_seconds=seconds,
        )

    return publish(target, write, check, prior_seconds=seconds)


def check_stablehlo_precision(precision):
    return check_artifact_precision(precision, ARTIFACTS, "StableHLO")


def export_stablehlo_models(context, precisions=tuple(ARTIFACTS)):
    """{artifact path: parity report} for the StableHLO artifacts of `precisions`, refused ones
    included (report["passed"] False); a ParityError when the FP32 one was refused."""
    precisions = [check_stablehlo_precision(p) for p in precisions]
    clean_leftovers(context.source.directory)
    reports = publish_all(
        {
            context.source.artifact(ARTIFACTS[p]): functools.partial(
                export_stablehlo_model, context, p
            )
            for p in precisions
        }
    )
    return require_fp32(reports, [context.source.artifact(ARTIFACTS["fp32"])])


def export_stablehlo(path, precisions=tuple(ARTIFACTS), count=None, thresholds=None):
    """Export the run directory or .keras file at `path` to StableHLO; {artifact path: parity
    report}."""
    require_jax_backend()  # before the model is loaded
    return cli.export_path(
        path, precisions, check_stablehlo_precision, export_stablehlo_models, count, thresholds
    )


def main(argv=None):
    """Command line: export RUN_DIR's classifier to StableHLO, with parity reports.

    Args:
        argv: sys.argv[1:] unless given: RUN_DIR or a .keras file, then the flags `--help` lists.

    Exit status:
        0 when stablehlo/ was written, or any artifact when --precision leaves out fp32; 2 for a
            wrong argument or input; 1 when the export failed.

    Example:
        python export/to_stablehlo.py runs/listops-performer --precision fp32

    References:
        StableHLO, github.com/openxla/stablehlo; jax.export,
            jax.readthedocs.io/en/latest/export/export.html.
    """
    return cli.export_command(
        argv,
        script="to_stablehlo.py",
        doc=__doc__,
        precisions=ARTIFACTS,
        what="StableHLO artifacts",
        export=lambda args: export_stablehlo(args.path, args.precision, args.examples),
    )


if __name__ == "__main__":
    sys.exit(main())
