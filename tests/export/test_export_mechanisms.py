"""Every mechanism exports to SavedModel, FP32 ONNX and FP16 ONNX with the serving contract intact.

One export per mechanism with one tower, and per TWO_TOWER_MECHANISMS with two (`tiny_exports`:
once per test process, through `export_onnx`, which writes the FP32 SavedModel unless the OpenVINO
module's export of the same tiny run did), is shared by the checks. Each check runs the artifacts
on fresh inputs (not the parity examples) against the Keras model loaded from model.keras.
"""

import json

import numpy as np
import onnx
import pytest
import tensorflow as tf

from arena_tf.export.metadata import read_metadata
from arena_tf.export.to_onnx import export_onnx
from tests.export.conftest import (
    LENGTH,
    MECHANISMS,
    PARITY_EXAMPLES,
    TWO_TOWER_MECHANISMS,
    assert_within_rounding,
    case_params,
    feeds,
    keras_logits,
    onnx_logits,
    token_batch,
)

CASES = [(m, False) for m in MECHANISMS] + [(m, True) for m in TWO_TOWER_MECHANISMS]


@pytest.fixture(params=case_params(CASES))
def exported(request, tiny_exports):
    return tiny_exports(request.param, export_onnx)


def test_every_artifact_is_written_with_a_passing_parity_report(exported):
    run_dir, _, reports = exported
    written = {"saved_model", "model.onnx", "model.fp16.onnx"}
    assert written - {"saved_model"} <= set(reports) <= written
    for name in written:
        saved = json.loads((run_dir / f"{name}.parity.json").read_text())
        assert saved["passed"] and saved["examples"]["count"] == PARITY_EXAMPLES
    assert reports["model.onnx"]["comparisons"]["keras_fp32"]["max_abs_diff"] <= 1e-4
    assert reports["model.onnx"]["providers"] == ["CPUExecutionProvider"]
    assert not list(run_dir.glob(".*"))  # no temporary directories left behind


def test_saved_model_signatures_match_keras(exported):
    run_dir, model, _ = exported
    signatures = tf.saved_model.load(str(run_dir / "saved_model")).signatures
    signature = signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    names = [t.name.split(":")[0] for t in model.inputs]
    assert sorted(specs) == sorted(names)
    assert all(s.dtype == tf.int32 and s.shape.as_list() == [None, None] for s in specs.values())
    arrays = token_batch(model.get_layer("encoder").config)
    outputs = signature(**{k: tf.constant(v) for k, v in feeds(model, arrays).items()})
    assert list(outputs) == ["logits"] and outputs["logits"].dtype == tf.float32
    np.testing.assert_allclose(outputs["logits"].numpy(), keras_logits(model, arrays), atol=1e-4)
    # int64 ids and a shorter input, padded inside with the padding id
    short = [a[:, : LENGTH - 24] for a in arrays]
    expected = keras_logits(model, [np.pad(a, [(0, 0), (0, 24)]) for a in short])
    outputs = signatures["serving_int64"](
        **{k: tf.constant(v, tf.int64) for k, v in feeds(model, short).items()}
    )
    np.testing.assert_allclose(outputs["logits"].numpy(), expected, atol=1e-4)


@pytest.mark.parametrize("batch", [1, 7])
def test_onnx_fp32_matches_keras_at_any_batch_size(exported, batch):
    run_dir, model, _ = exported
    arrays = token_batch(model.get_layer("encoder").config, batch=batch)
    session, logits = onnx_logits(run_dir / "model.onnx", model, arrays)
    assert [i.shape for i in session.get_inputs()] == [["batch", "length"]] * len(arrays)
    assert [(o.name, o.type) for o in session.get_outputs()] == [("logits", "tensor(float)")]
    np.testing.assert_allclose(logits, keras_logits(model, arrays), atol=1e-4)


def test_onnx_fp16_keeps_io_types_and_predicts_the_same_classes(exported):
    run_dir, model, reports = exported
    arrays = token_batch(model.get_layer("encoder").config, batch=16, seed=3)
    session, logits = onnx_logits(run_dir / "model.fp16.onnx", model, arrays)
    assert {i.type for i in session.get_inputs()} == {"tensor(int32)"}
    assert session.get_outputs()[0].type == "tensor(float)"
    reference = keras_logits(model, arrays)
    assert_within_rounding(logits, reference, "fp16")  # float16 rounding, not a broken graph
    error = np.abs(logits - reference).max()
    top_two = np.sort(reference, axis=-1)[:, -2:]
    decided = top_two[:, 1] - top_two[:, 0] > 2 * error  # rounding cannot swap these classes
    assert decided.any() and (logits.argmax(-1) == reference.argmax(-1))[decided].all()
    assert reports["model.fp16.onnx"]["error"]["decided"]["flipped"] == 0
    measured = reports["model.fp16.onnx"]["error"]["measured_error"]
    config = model.get_layer("encoder").config
    print(
        f"{config.attention}, {2 if config.two_tower else 1} tower(s): FP16 ONNX logit error, "
        f"median {measured['median_in_u_s']:.1f} u·S, largest {measured['max_in_u_s']:.1f} u·S"
    )


@pytest.mark.parametrize("name", ["model.onnx", "model.fp16.onnx"])
def test_onnx_files_pass_the_full_checker_and_take_shorter_inputs(exported, name):
    run_dir, model, _ = exported
    onnx.checker.check_model(onnx.load(str(run_dir / name)), full_check=True)
    arrays = token_batch(model.get_layer("encoder").config, batch=2, seed=4)
    short = [a[:, : LENGTH // 2] for a in arrays]
    _, logits = onnx_logits(run_dir / name, model, short)
    expected = keras_logits(model, [np.pad(a, [(0, 0), (0, LENGTH // 2)]) for a in short])
    assert_within_rounding(logits, expected, "fp32" if name == "model.onnx" else "fp16")


def test_metadata_describes_the_model_in_every_artifact(exported):
    run_dir, model, _ = exported
    config = model.get_layer("encoder").config
    precisions = {"saved_model": "fp32", "model.onnx": "fp32", "model.fp16.onnx": "fp16"}
    for name, precision in precisions.items():
        metadata = read_metadata(run_dir / name)
        assert metadata["precision"] == precision
        assert metadata["mechanism"] == config.attention
        assert metadata["model_config"] == json.loads(json.dumps(config.to_dict()))
        assert metadata["input_names"] == [t.name.split(":")[0] for t in model.inputs]
        assert metadata["num_inputs"] == len(model.inputs)
        assert (metadata["max_len"], metadata["num_classes"]) == (LENGTH, config.num_classes)
        assert metadata["parameters"] == model.count_params()
        assert metadata["source"] == str((run_dir / "model.keras").resolve())
        assert metadata["task"] == ("retrieval" if config.two_tower else "listops")
        assert metadata["sequence_length"] == {
            "min": 1,
            "max": LENGTH,
            "dynamic": True,
            "padding_id": 0,
            "why": metadata["sequence_length"]["why"],
        }
