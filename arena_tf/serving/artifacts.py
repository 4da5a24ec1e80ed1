"""What a run directory holds for serving: its exported artifacts, their metadata and sizes.

The artifacts and their metadata are the export contract (export/): `saved_model/`,
`saved_model_bf16/`, `saved_model_fp16/`, `model.onnx`, `model.fp16.onnx`, `openvino/`,
`openvino_fp16/`, each carrying one JSON
document (task, max_len, vocab_size, input_names, num_classes, parameters, ...).

    run = RunInfo.read("runs/listops-performer")
    run.metadata["max_len"], run.task_config.get("data_dir")
"""

import dataclasses
import pathlib

from arena_tf.config import read_run_config
from arena_tf.export import metadata as export_metadata
from arena_tf.export.contract import ALL_ARTIFACTS
from arena_tf.export.errors import ExportError

ARTIFACT_NAMES = ALL_ARTIFACTS


def read_metadata(path):
    """The arena_tf metadata of an artifact (SavedModel directory or .onnx file); {} if it has none
    or it cannot be read (export.metadata raises instead)."""
    try:
        return export_metadata.read_metadata(path)
    except ExportError:
        return {}


def size_on_disk(path):
    """Bytes of a file, or of every file under a directory."""
    path = pathlib.Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@dataclasses.dataclass
class RunInfo:
    """A run directory as the bench sees it: name, metadata (from its first artifact that has any)
    and the `task` section of its config.yaml (data_dir, max_len, params)."""

    path: pathlib.Path
    metadata: dict
    task_config: dict

    @property
    def name(self):
        return self.path.name

    @classmethod
    def read(cls, run_dir):
        path = pathlib.Path(run_dir)
        if not path.is_dir():
            raise FileNotFoundError(
                f"run directory {path} does not exist; expected a directory "
                "written by python -m arena_tf.train and export/"
            )
        metadata = next(
            (
                m
                for name in ARTIFACT_NAMES
                if (path / name).exists()
                for m in [read_metadata(path / name)]
                if m
            ),
            {},
        )
        task_config = read_task_config(path)
        check_metadata_pair(metadata, path, task_config)
        return cls(path=path, metadata=metadata, task_config=task_config)


def check_metadata_pair(metadata, run_dir, task_config):
    """A UsageError when the exported model (its metadata) and config.yaml describe different
    models or tasks (arena_tf/run_pair): the bench would send one task's rows to another's model."""
    config = pathlib.Path(run_dir) / "config.yaml"
    if not metadata or not config.is_file():
        return
    from arena_tf.config import read_yaml
    from arena_tf.run_pair import check_pair

    section = read_yaml(config).get("model")
    task = task_config.get("name")
    named = {**metadata.get("model_config", {}), "task": metadata.get("task")}
    wanted = {**(section if isinstance(section, dict) else {}), "task": task}
    if metadata.get("task") is None or task is None:
        wanted.pop("task")
    check_pair(named, wanted, f"the model exported in {run_dir}", config, task)


def read_task_config(run_dir):
    """The `task` section of RUN_DIR/config.yaml, or {} when the run has no config; the whole
    config is validated (a ConfigError, a ValueError, for one that is not a run's config)."""
    config = pathlib.Path(run_dir) / "config.yaml"
    if not config.is_file():
        return {}
    return dataclasses.asdict(read_run_config(run_dir).task)
