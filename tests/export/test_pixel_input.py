"""A pixel model that reads brightness (model.token_embedding=intensity) exports like the others:
SavedModel, FP32 ONNX and FP16 ONNX pass their parity checks and give the Keras model's logits."""

import numpy as np

from arena_tf.export.to_onnx import export_onnx
from tests.export.conftest import (
    PARITY_EXAMPLES,
    keras_logits,
    onnx_logits,
    write_run_dir,
)


def test_intensity_input_exports_with_parity(tmp_path):
    import keras

    keras.utils.set_random_seed(0)
    run_dir, model = write_run_dir(
        tmp_path / "run",
        "s4d",
        task={"name": "pathfinder", "data_dir": str(tmp_path / "no-data")},
        token_embedding="intensity",
    )
    reports = {
        path.name: report for path, report in export_onnx(run_dir, count=PARITY_EXAMPLES).items()
    }
    assert set(reports) == {"saved_model", "model.onnx", "model.fp16.onnx"}
    assert all(report["passed"] for report in reports.values())
    pixels = np.random.default_rng(3).integers(0, 256, size=(4, 1024)).astype("int32")
    _, logits = onnx_logits(run_dir / "model.onnx", model, [pixels])
    np.testing.assert_allclose(logits, keras_logits(model, [pixels]), atol=1e-4)
