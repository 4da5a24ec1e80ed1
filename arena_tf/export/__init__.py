"""Export a trained arena_tf run to SavedModel and ONNX, each checked against the Keras model.

    python export/to_savedmodel.py runs/text-performer   # saved_model/, saved_model_bf16/, _fp16/
    python export/to_onnx.py runs/text-performer            # model.onnx, model.fp16.onnx
    python export/to_stablehlo.py runs/text-performer       # stablehlo/, _bf16/, _fp16/ (JAX, XLA)

    from arena_tf.export.to_onnx import export_onnx
    from arena_tf.export.metadata import read_metadata
    reports = export_onnx("runs/text-performer")            # {artifact path: parity report}
    read_metadata("runs/text-performer/model.onnx")["mechanism"]   # 'performer'

Every artifact is written atomically beside the run's model.keras with a parity report
`<artifact>.parity.json`; a failed parity check leaves the previous artifact untouched and writes
`<artifact>.parity.failed.json`. FP32 is always written (or the export fails), each reduced
precision when it passes its own check. Run an artifact with its ids checked:

    from arena_tf.export.runners import artifact_predictor
    logits = artifact_predictor("runs/text-performer/model.onnx")([tokens])
"""

from arena_tf.export.errors import ExportError, ExportUsageError, ParityError

__all__ = ["ExportError", "ExportUsageError", "ParityError"]
