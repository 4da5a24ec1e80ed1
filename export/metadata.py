"""The arena_tf metadata inside every artifact, as one JSON document, and `read_metadata(path)`.

SavedModel: `assets.extra/arena_tf.json`; ONNX: the metadata_props entry `arena_tf`.

    read_metadata("runs/text-performer/saved_model")["input_names"]     # ['tokens']
    read_metadata("runs/text-performer/model.fp16.onnx")["precision"]   # 'fp16'
"""

import json
import pathlib

import onnx

from export.errors import ExportError

KEY = "arena_tf"
SAVED_MODEL_FILE = pathlib.Path("assets.extra") / f"{KEY}.json"


def build_metadata(source, precision):
    """The metadata document of an artifact of `source` computing in `precision`."""
    # Imported here: reading metadata (serving's model processes) must not load TensorFlow.
    from export.signature import OUTPUT_NAME, input_names

    config = source.config
    return {
        "task": source.task.name if source.task else None,
        "mechanism": config.attention,
        "model_config": config.to_dict(),
        "vocab_size": config.vocab_size,
        "max_len": config.max_len,
        "num_inputs": len(input_names(config)),
        "input_names": input_names(config),
        "output_name": OUTPUT_NAME,
        "num_classes": config.num_classes,
        "padding_id": config.padding_id,
        "parameters": source.model.count_params(),
        "precision": precision,
        "source": str(source.model_path),
    }


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


def _read_saved_model(path):
    file = path / SAVED_MODEL_FILE
    if not file.is_file():
        raise ExportError(
            f"{path} has no {SAVED_MODEL_FILE}; re-export it with export/to_savedmodel.py"
        )
    return json.loads(file.read_text())


def _read_onnx(path):
    try:
        model_proto = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # protobuf decode errors have no common base class
        raise ExportError(f"{path} is not a readable ONNX model ({error}); re-export it") from None
    props = {p.key: p.value for p in model_proto.metadata_props}
    if KEY not in props:
        raise ExportError(f"{path} has no '{KEY}' metadata; re-export it with export/to_onnx.py")
    return json.loads(props[KEY])


READERS = {"saved_model": _read_saved_model, ".onnx": _read_onnx}


def artifact_kind(path):
    """'saved_model' for a directory, else the file suffix ('.onnx')."""
    return "saved_model" if path.is_dir() else path.suffix


def read_metadata(path):
    """The arena_tf metadata of a SavedModel directory or an .onnx file, as a dict."""
    path = pathlib.Path(path)
    if not path.exists():
        raise ExportError(
            f"{path} does not exist; expected a SavedModel directory or an .onnx file"
        )
    reader = READERS.get(artifact_kind(path))
    if reader is None:
        raise ExportError(f"{path} is neither a SavedModel directory nor an .onnx file")
    return reader(path)
