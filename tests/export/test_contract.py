"""The input contract of the artifacts (arena_tf/export/contract.py): int32 and int64 ids, lengths
up to max_len where the model has a padding id, and one clear TokenError from the Python runners for
ids a model cannot take; what the raw graphs do with such ids (docs/guide/export.md states it)."""

import json

import numpy as np
import onnx
import pytest
import tensorflow as tf

from arena_tf.export.contract import TokenError, check_tokens
from arena_tf.export.metadata import read_metadata
from arena_tf.export.runners import artifact_predictor
from arena_tf.export.to_onnx import export_onnx
from tests.export.conftest import (
    LENGTH,
    assert_within_rounding,
    onnx_session,
    token_batch,
    write_run_dir,
)

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = pytest.mark.xdist_group("test_contract")

ARTIFACTS = ["saved_model", "model.onnx", "model.fp16.onnx"]
VOCAB = 16  # the vocabulary of conftest's tiny runs (ListOps')


def keras_logits(model, tokens):
    return np.asarray(model(tokens, training=False))


def padded(tokens, length=LENGTH, padding_id=0):
    return np.pad(tokens, [(0, 0), (0, length - tokens.shape[1])], constant_values=padding_id)


@pytest.mark.parametrize("name", ARTIFACTS)
def test_runners_refuse_ids_outside_the_vocabulary_in_one_line(exported_linear, name):
    run_dir, model = exported_linear
    predict = artifact_predictor(run_dir / name)
    (tokens,) = token_batch(model.get_layer("encoder").config, batch=2)
    for bad, shown in [(-1, "-1"), (VOCAB, str(VOCAB)), (2**40, str(2**40))]:
        ids = tokens.astype("int64")
        ids[1, 3] = bad
        with pytest.raises(TokenError) as error:
            predict([ids])
        message = str(error.value)
        assert "\n" not in message and error.value.exit_code == 2
        assert message == (
            f"tokens holds token id {shown} (row 1, position 3; 1 id(s) out of "
            f"range); expected ids in [0, {VOCAB}), the model's vocabulary; map "
            "unknown or out-of-range tokens to a valid id (e.g. the padding or "
            "unknown id) before calling the model"
        )


def test_runners_take_int64_ids_and_shorter_inputs(exported_linear):
    run_dir, model = exported_linear
    (tokens,) = token_batch(model.get_layer("encoder").config, batch=3)
    short = tokens[:, :40]
    expected = keras_logits(model, padded(short))
    for name, precision in [
        ("saved_model", "fp32"),
        ("model.onnx", "fp32"),
        ("model.fp16.onnx", "fp16"),
    ]:
        predict = artifact_predictor(run_dir / name)
        assert_within_rounding(predict([short.astype("int64")]), expected, precision)
        assert_within_rounding(predict([short]), expected, precision)


@pytest.mark.parametrize(
    "shape, message",
    [
        ((2, LENGTH + 1), "tokens has shape [2, 65]; expected [batch, length] with length 1 to 64"),
        ((2, 0), "tokens has shape [2, 0]; expected [batch, length] with length 1 to 64"),
        ((LENGTH,), "tokens has shape [64]; expected [batch, length]"),
    ],
)
def test_runners_refuse_wrong_shapes(exported_linear, shape, message):
    run_dir, _ = exported_linear
    with pytest.raises(TokenError, match=message.replace("[", r"\[").replace("]", r"\]")):
        artifact_predictor(run_dir / "model.onnx")([np.ones(shape, "int32")])


def test_check_tokens_refuses_floats_and_a_wrong_input_count():
    metadata = {
        "input_names": ["tokens_1", "tokens_2"],
        "vocab_size": 5,
        "max_len": 8,
        "sequence_length": {"min": 1, "max": 8},
    }
    ids = np.ones((2, 8), "int32")
    with pytest.raises(TokenError, match=r"^1 token array\(s\) given; expected 2 \(tokens_1, "):
        check_tokens([ids], metadata)
    with pytest.raises(TokenError, match="tokens_2 holds float32 values; expected integer"):
        check_tokens([ids, ids.astype("float32")], metadata)
    with pytest.raises(TokenError, match=r"batch sizes \[2, 1\]"):
        check_tokens([ids, ids[:1]], metadata)
    checked = check_tokens((ids.astype("uint8"), ids.astype("int64")), metadata)
    assert [a.dtype for a in checked] == [np.int32, np.int32]


def test_saved_model_signatures_take_int32_and_int64_up_to_max_len(exported_linear):
    run_dir, model = exported_linear
    loaded = tf.saved_model.load(str(run_dir / "saved_model"))
    (tokens,) = token_batch(model.get_layer("encoder").config, batch=3)
    expected = keras_logits(model, padded(tokens[:, :40]))
    for signature, dtype in [("serving_default", tf.int32), ("serving_int64", tf.int64)]:
        function = loaded.signatures[signature]
        (spec,) = function.structured_input_signature[1].values()
        assert (spec.dtype, spec.shape.as_list()) == (dtype, [None, None])
        logits = function(tokens=tf.constant(tokens[:, :40], dtype))["logits"].numpy()
        np.testing.assert_allclose(logits, expected, atol=1e-4)
    metadata = read_metadata(run_dir / "saved_model")
    assert metadata["input_dtypes"] == {"serving_default": "int32", "serving_int64": "int64"}
    assert metadata["sequence_length"]["dynamic"] and metadata["sequence_length"]["max"] == LENGTH


def test_raw_graphs_on_bad_ids_as_the_readme_states(exported_linear):
    """-1 silently reads the last vocabulary row (Keras and ONNX Gather wrap negative ids); an id
    at or past the vocabulary size fails inside the graph (CPU); a length past max_len fails;
    int64 ids past int32 wrap."""
    run_dir, model = exported_linear
    (tokens,) = token_batch(model.get_layer("encoder").config, batch=1)
    last, minus_one, too_big = (tokens.copy() for _ in range(3))
    last[0, 3], minus_one[0, 3], too_big[0, 3] = VOCAB - 1, -1, VOCAB
    signatures = tf.saved_model.load(str(run_dir / "saved_model")).signatures
    serve = signatures["serving_default"]
    session = onnx_session(run_dir / "model.onnx")
    for run in (
        lambda t: serve(tokens=tf.constant(t))["logits"].numpy(),
        lambda t: session.run(["logits"], {"tokens": t})[0],
    ):
        np.testing.assert_array_equal(run(minus_one), run(last))
    with pytest.raises(tf.errors.InvalidArgumentError, match="is not in \\[0, 16\\)"):
        serve(tokens=tf.constant(too_big))
    with pytest.raises(Exception, match="out of data bounds"):
        session.run(["logits"], {"tokens": too_big})
    longer = np.concatenate([tokens, tokens[:, :6]], axis=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="EnsureShape"):
        serve(tokens=tf.constant(longer))
    with pytest.raises(Exception, match="position_embedding"):
        session.run(["logits"], {"tokens": longer})
    wrapped = tokens.astype("int64")
    wrapped[0, 3] = 2**32 + 5
    five = tokens.copy()
    five[0, 3] = 5
    np.testing.assert_array_equal(
        signatures["serving_int64"](tokens=tf.constant(wrapped))["logits"].numpy(),
        serve(tokens=tf.constant(five))["logits"].numpy(),
    )


def test_onnx_inputs_are_int32_with_named_batch_and_length_axes(exported_linear):
    run_dir, _ = exported_linear
    for name in ("model.onnx", "model.fp16.onnx"):
        session = onnx_session(run_dir / name)
        (tokens,) = session.get_inputs()
        assert (tokens.name, tokens.type, tokens.shape) == (
            "tokens",
            "tensor(int32)",
            ["batch", "length"],
        )
        assert read_metadata(run_dir / name)["input_dtypes"] == {"onnx": "int32"}


PIXELS = 32 * 32  # Pathfinder's images, the length of a model without padding


@pytest.fixture(scope="module")
def pixels_run(tmp_path_factory):
    """A run whose model has no padding id (pixels): fixed length, stated in its metadata."""
    run_dir, model = write_run_dir(
        tmp_path_factory.mktemp("pixels"), "local", task={"name": "pathfinder"}
    )
    export_onnx(run_dir, ["fp32"], count=4)
    return run_dir, model


def test_a_model_without_padding_id_takes_exactly_max_len(pixels_run):
    run_dir, _ = pixels_run
    signature = tf.saved_model.load(str(run_dir / "saved_model")).signatures["serving_default"]
    (spec,) = signature.structured_input_signature[1].values()
    assert spec.shape.as_list() == [None, PIXELS]
    session = onnx_session(run_dir / "model.onnx")
    assert session.get_inputs()[0].shape == ["batch", PIXELS]
    for name in ("saved_model", "model.onnx"):
        length = read_metadata(run_dir / name)["sequence_length"]
        assert (length["dynamic"], length["min"], length["max"]) == (False, PIXELS, PIXELS)
        assert "no padding id" in length["why"]
        with pytest.raises(
            TokenError,
            match=r"shape \[1, 40\]; expected \[batch, length\] with "
            r"length max_len \(1024\)",
        ):
            artifact_predictor(run_dir / name)([np.ones((1, 40), "int32")])
    report = json.loads((run_dir / "model.onnx.parity.json").read_text())
    assert not any(c["name"].startswith("length") for c in report["checks"])


def test_every_exported_onnx_file_passes_the_full_checker(exported_linear, pixels_run):
    exported = {
        exported_linear[0]: {"model.onnx", "model.fp16.onnx"},
        pixels_run[0]: {"model.onnx"},
    }
    for run_dir, names in exported.items():
        assert {path.name for path in run_dir.glob("*.onnx")} == names
        for name in names:
            onnx.checker.check_model(onnx.load(str(run_dir / name)), full_check=True)


def test_every_artifact_records_the_model_keras_it_was_exported_from(exported_linear):
    from arena_tf.export.metadata import read_metadata, source_digest

    run_dir, _ = exported_linear
    digest = source_digest(run_dir / "model.keras")
    for name in ("saved_model", "model.onnx", "model.fp16.onnx"):
        assert read_metadata(run_dir / name)["source_sha256"] == digest, name
