"""Every public layer and command documents itself in one layout (Args, Returns or Exit status,
Example, References), and every layer's Example runs."""

import ast
import inspect
import pathlib
import textwrap

import pytest

from arena_tf import layers
from arena_tf.layers.base import Attention

ROOT = pathlib.Path(__file__).resolve().parents[1]
COMMANDS = [
    "arena_tf/train.py",
    "arena_tf/demo.py",
    "arena_tf/data.py",
    "arena_tf/reproduce/__main__.py",
    "arena_tf/benchmark/__main__.py",
    "arena_tf/analysis/__main__.py",
    "arena_tf/preset_timing.py",
    "arena_tf/generators/listops.py",
    "arena_tf/generators/pathfinder.py",
    "arena_tf/serving/bench.py",
    "arena_tf/serving/submission.py",
    "arena_tf/export/to_onnx.py",
    "arena_tf/export/to_openvino.py",
    "arena_tf/export/to_savedmodel.py",
    "arena_tf/export/to_stablehlo.py",
]
LAYERS = {name: layers.lookup(name) for name in layers.available()} | {"base": Attention}


def section_names(doc):
    """The Google-style section headers of a docstring: lines like `Args:` alone on a line."""
    return {
        line.strip()[:-1]
        for line in inspect.cleandoc(doc).splitlines()
        if line.strip().endswith(":")
        and line.strip()[:-1] in ("Args", "Returns", "Exit status", "Example", "References")
    }


def example_code(doc):
    """The lines under `Example:`, dedented: up to the next line indented no deeper."""
    lines = inspect.cleandoc(doc).splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Example:")
    indent = len(lines[start]) - len(lines[start].lstrip())
    code = []
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        code.append(line)
    return textwrap.dedent("\n".join(code)).strip()


def main_docstring(path):
    """The docstring of a command module's `main`, read without importing the module."""
    tree = ast.parse((ROOT / path).read_text())
    mains = [
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main"
    ]
    assert mains, f"{path} has no main()"
    return ast.get_docstring(mains[0]) or ""


def test_every_registered_mechanism_is_covered():
    assert len(LAYERS) == len(layers.available()) + 1 >= 15


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_docstring_has_the_four_sections(name):
    doc = vars(LAYERS[name]).get("__doc__") or ""
    assert section_names(doc) >= {"Args", "Returns", "Example", "References"}, name


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_example_runs_and_keeps_the_input_shape(name):
    code = example_code(vars(LAYERS[name])["__doc__"])
    assert "layers.get(" in code
    namespace = {}
    exec(compile(code, f"<{name} docstring example>", "exec"), namespace)  # noqa: S102 (the docstring's own example)
    assert tuple(namespace["y"].shape) == tuple(namespace["x"].shape)


@pytest.mark.parametrize("path", COMMANDS)
def test_command_docstring_has_the_four_sections(path):
    found = section_names(main_docstring(path))
    assert {"Args", "Example", "References"} <= found, path
    assert found & {"Returns", "Exit status"}, path


@pytest.mark.parametrize("path", COMMANDS)
def test_command_example_names_the_command(path):
    example = example_code(main_docstring(path))
    module = path.removesuffix(".py").removesuffix("/__main__").replace("/", ".")
    # the export and serving commands as a checkout spells them: export/to_onnx.py, serving.bench
    spellings = {module, path, module.removeprefix("arena_tf."), path.removeprefix("arena_tf/")}
    assert any(spelling in example for spelling in spellings), (path, example)
