"""Every mechanism exports to OpenVINO IR (export/to_openvino.py) and runs there as in Keras.

One export per mechanism and one two-tower case (`tiny_exports`: once per test process, from the
FP32 SavedModel the ONNX module's export of the same tiny run converts too); each check runs the IR
on fresh inputs (not the parity examples) against the Keras model, as a user would through
`export.runners.artifact_predictor`.
"""

import json

import numpy as np
import pytest

pytest.importorskip("openvino")

from arena_tf.export import openvino_model  # noqa: E402
from arena_tf.export.metadata import read_metadata  # noqa: E402
from arena_tf.export.runners import artifact_predictor  # noqa: E402
from arena_tf.export.to_openvino import export_openvino  # noqa: E402
from tests.export.conftest import (  # noqa: E402
    LENGTH,
    MECHANISMS,
    assert_within_rounding,
    case_params,
    keras_logits,
    token_batch,
)

CASES = [(m, False) for m in MECHANISMS] + [("linformer", True)]


@pytest.fixture(params=case_params(CASES))
def exported(request, tiny_exports):
    return tiny_exports(request.param, export_openvino)


def test_both_irs_are_written_with_passing_parity_reports(exported):
    run_dir, _, reports = exported
    assert (
        {"openvino", "openvino_fp16"}
        <= set(reports)
        <= {"saved_model", "openvino", "openvino_fp16"}
    )
    for name in ("openvino", "openvino_fp16"):
        saved = json.loads((run_dir / f"{name}.parity.json").read_text())
        assert saved["passed"] and saved["runtime"] == "openvino"
        assert saved["inference_precision"] == "f32"
        assert {p.name for p in (run_dir / name).iterdir()} == {
            "model.xml",
            "model.bin",
            "arena_tf.json",
        }
    assert reports["openvino"]["comparisons"]["keras_fp32"]["max_abs_diff"] <= 1e-4
    assert not list(run_dir.glob(".*"))  # no temporary directories left behind


def test_the_fp32_ir_matches_keras_on_fresh_and_shorter_inputs(exported):
    run_dir, model, _ = exported
    config = model.get_layer("encoder").config
    predict = artifact_predictor(run_dir / "openvino")
    arrays = token_batch(config, batch=3, seed=7)
    np.testing.assert_allclose(predict(arrays), keras_logits(model, arrays), atol=1e-4)
    short = [a[:, : LENGTH // 2] for a in arrays]
    padded = [np.pad(a, [(0, 0), (0, LENGTH // 2)]) for a in short]
    np.testing.assert_allclose(predict(short), keras_logits(model, padded), atol=1e-4)


def test_the_fp16_ir_holds_float16_weights_and_keeps_the_classes(exported):
    run_dir, model, _ = exported
    xml = (run_dir / "openvino_fp16" / "model.xml").read_text()
    assert (
        'element_type="f16"' in xml
        and 'element_type="f16"' not in (run_dir / "openvino" / "model.xml").read_text()
    )
    arrays = token_batch(model.get_layer("encoder").config, batch=5, seed=3)
    logits = artifact_predictor(run_dir / "openvino_fp16")(arrays)
    assert_within_rounding(logits, keras_logits(model, arrays), "fp16")


def test_metadata_names_the_ir_and_its_precision(exported):
    run_dir, model, _ = exported
    for name, precision in (("openvino", "fp32"), ("openvino_fp16", "fp16")):
        metadata = read_metadata(run_dir / name)
        assert metadata["precision"] == precision
        assert metadata["input_dtypes"] == {"openvino": "int32"}
        assert metadata["input_names"] == [t.name.split(":")[0] for t in model.inputs]


def test_an_ir_never_computes_in_another_precision_than_asked(exported):
    run_dir, _, _ = exported
    for precision in ("fp32", "fp16", "bf16"):
        try:
            compiled = openvino_model.compile_ir(run_dir / "openvino", precision)
        except openvino_model.PrecisionUnavailable as error:
            assert f"computes {openvino_model.HINTS[precision]} as" in str(error)
            continue
        used = compiled.model.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        assert used == compiled.precision == openvino_model.HINTS[precision]
