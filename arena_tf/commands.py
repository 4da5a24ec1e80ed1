"""The commands installed as console scripts (setup.py): `arena-tf-train ...` is the same program
as `python -m arena_tf.train ...`. The script runs its module as `__main__`, so the command prepares
its process (`cli.prepare_process`) before TensorFlow and Keras are imported, as under `-m`."""

import pathlib
import runpy
import sys

# console script -> the module it runs
COMMANDS = {
    "arena-tf-train": "arena_tf.train",
    "arena-tf-demo": "arena_tf.demo",
    "arena-tf-data": "arena_tf.data",
    "arena-tf-reproduce": "arena_tf.reproduce",
    "arena-tf-benchmark": "arena_tf.benchmark",
    "arena-tf-analysis": "arena_tf.analysis",
    "arena-tf-export-savedmodel": "arena_tf.export.to_savedmodel",
    "arena-tf-export-onnx": "arena_tf.export.to_onnx",
    "arena-tf-export-openvino": "arena_tf.export.to_openvino",
    "arena-tf-export-stablehlo": "arena_tf.export.to_stablehlo",
    "arena-tf-serving-bench": "arena_tf.serving.bench",
    "arena-tf-serving-report": "arena_tf.serving.report",
}
CONSOLE_SCRIPTS = [f"{script} = arena_tf.commands:main" for script in COMMANDS]


def main():
    """The console scripts' entry: run the module of the script this process was started as."""
    script = pathlib.Path(sys.argv[0]).name.removesuffix(".exe")
    runpy.run_module(COMMANDS[script], run_name="__main__", alter_sys=True)
