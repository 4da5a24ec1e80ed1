"""The arena_tf metadata inside every artifact, as one JSON document, and `read_metadata(path)`.

SavedModel: `assets.extra/arena_tf.json`; ONNX: the metadata_props entry `arena_tf`; OpenVINO IR
directory: `arena_tf.json` beside model.xml; StableHLO directory: `arena_tf.json` beside
model.stablehlo.

    read_metadata("runs/text-performer/saved_model")["input_names"]     # ['tokens']
    read_metadata("runs/text-performer/model.fp16.onnx")["precision"]   # 'fp16'
    read_metadata("runs/text-performer/model.onnx")["sequence_length"]  # {'dynamic': True, ...}
"""

import hashlib
import json
import pathlib

import onnx

from arena_tf.export.contract import (
    INT64_SIGNATURE_NAME,
    OUTPUT_NAME,
    SIGNATURE_NAME,
    input_names,
    sequence_length,
)
from arena_tf.export.errors import ExportUsageError, one_line

KEY = "arena_tf"
# 2: int32 and int64 signatures, lengths up to max_len padded inside, sequence_length, input_dtypes.
FORMAT_VERSION = 2
SAVED_MODEL_FILE = pathlib.Path("assets.extra") / f"{KEY}.json"
OPENVINO_MODEL = "model.xml"  # with model.bin, inside an OpenVINO artifact directory
OPENVINO_FILE = f"{KEY}.json"
STABLEHLO_MODEL = "model.stablehlo"  # with weights.npz, inside a StableHLO artifact directory


def input_dtypes(kind):
    """{signature name: token dtype} a SavedModel takes; {'onnx': 'int32'} for ONNX and
    {'openvino': 'int32'} for OpenVINO (one graph input has one type; both are converted from the
    int32 signature)."""
    if kind == "saved_model":
        return {SIGNATURE_NAME: "int32", INT64_SIGNATURE_NAME: "int64"}
    return {kind: "int32"}


def build_metadata(source, precision, kind="saved_model"):
    """The metadata document of an artifact (`kind`: 'saved_model', 'onnx', 'openvino') of `source`
    computing in `precision`."""
    config = source.config
    return {
        "format": FORMAT_VERSION,
        "task": source.task.name if source.task else None,
        "mechanism": config.attention,
        "model_config": config.to_dict(),
        "vocab_size": config.vocab_size,
        "max_len": config.max_len,
        "num_inputs": len(input_names(config)),
        "input_names": input_names(config),
        "output_name": OUTPUT_NAME,
        "input_dtypes": input_dtypes(kind),
        "sequence_length": sequence_length(config),
        "num_classes": config.num_classes,
        "padding_id": config.padding_id,
        "parameters": source.model.count_params(),
        "precision": precision,
        "source": str(source.model_path),
        "source_sha256": source_digest(source.model_path),
    }


def source_digest(path):
    """The SHA-256 of the .keras file an artifact is exported from (hex): a run trained on after
    its export holds another model.keras, and its artifacts then no longer stand for it."""
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for chunk in iter(lambda: source.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_saved_model_metadata(directory, metadata):
    """Store `metadata` as assets.extra/arena_tf.json inside a SavedModel directory."""
    path = pathlib.Path(directory) / SAVED_MODEL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n")


def set_onnx_metadata(model_proto, metadata):
    """Store `metadata` in the ONNX model's metadata_props under `arena_tf` (replacing any)."""
    props = {p.key: p.value for p in model_proto.metadata_props}
    onnx.helper.set_model_props(model_proto, {**props, KEY: json.dumps(metadata, sort_keys=True)})
    return model_proto


def _read_json_inside(path, name, what, exporter):
    """The JSON document `name` inside the artifact directory `path` (a `what` that `exporter`
    writes); a one-line ExportUsageError when it is missing."""
    file = path / name
    if not file.is_file():
        raise ExportUsageError(
            f"{path} has no {name}",
            f"{what} written by {exporter}",
            f"re-export it with {exporter}",
        )
    return json.loads(file.read_text())


def _read_saved_model(path):
    return _read_json_inside(path, SAVED_MODEL_FILE, "a SavedModel", "export/to_savedmodel.py")


def write_openvino_metadata(directory, metadata):
    """Store `metadata` as arena_tf.json inside an OpenVINO (or StableHLO) artifact directory."""
    (pathlib.Path(directory) / OPENVINO_FILE).write_text(
        json.dumps(metadata, indent=2, sort_keys=True) + "\n"
    )


write_directory_metadata = write_openvino_metadata


def _read_openvino(path):
    return _read_json_inside(path, OPENVINO_FILE, "an OpenVINO directory", "export/to_openvino.py")


def _read_stablehlo(path):
    return _read_json_inside(path, OPENVINO_FILE, "a StableHLO directory", "export/to_stablehlo.py")


def _read_onnx(path):
    try:
        model_proto = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # noqa: BLE001 (protobuf decode errors have no common base class)
        raise ExportUsageError(
            f"{path} is not a readable ONNX model ({one_line(error)})",
            "an .onnx file written by export/to_onnx.py",
            "re-export it with export/to_onnx.py",
        ) from None
    props = {p.key: p.value for p in model_proto.metadata_props}
    if KEY not in props:
        raise ExportUsageError(
            f"{path} has no '{KEY}' metadata",
            "an .onnx file written by export/to_onnx.py",
            "re-export it with export/to_onnx.py",
        )
    return json.loads(props[KEY])


READERS = {
    "saved_model": _read_saved_model,
    "openvino": _read_openvino,
    "stablehlo": _read_stablehlo,
    ".onnx": _read_onnx,
}
# Directory artifacts known by the model file they hold; any other directory is a SavedModel.
DIRECTORY_KINDS = {OPENVINO_MODEL: "openvino", STABLEHLO_MODEL: "stablehlo"}


def artifact_kind(path):
    """'openvino' for a directory holding model.xml, 'stablehlo' for one holding model.stablehlo,
    'saved_model' for another directory, else the file suffix ('.onnx')."""
    if path.is_dir():
        return next(
            (kind for name, kind in DIRECTORY_KINDS.items() if (path / name).is_file()),
            "saved_model",
        )
    return path.suffix


def read_metadata(path):
    """The arena_tf metadata of a SavedModel directory or an .onnx file, as a dict."""
    path = pathlib.Path(path)
    if not path.exists():
        raise ExportUsageError(
            f"{path} does not exist",
            "a SavedModel directory or an .onnx file",
            "export the run first (export/to_savedmodel.py, export/to_onnx.py)",
        )
    reader = READERS.get(artifact_kind(path))
    if reader is None:
        raise ExportUsageError(
            f"{path} is neither a SavedModel directory nor an .onnx file",
            "a SavedModel directory or an .onnx file",
            "pass the path of an exported artifact",
        )
    return reader(path)
