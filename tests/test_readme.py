"""The README promises what the code does: its make targets exist, its library example runs, and
every command it shows is run here (`--help`) and accepts each flag the README gives it."""

import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from arena_tf import catalogue
from arena_tf.config import BLOCKS

pytestmark = pytest.mark.slow  # starts processes

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
# Commands of other tools the README shows for setting up or watching; not the project's to test.
OTHER_TOOLS = {"git", "cd", "pip", "python3.11", ".", "tensorboard", "make"}  # make: its own test


def blocks(language):
    """The code blocks of the README in `language`."""
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.M | re.S)


def shell_commands():
    """Each command line of the README's shell blocks, comments dropped, `&&` chains split."""
    lines = [line.split("  #")[0].strip() for block in blocks("sh") for line in block.splitlines()]
    return [part.strip() for line in lines if line for part in line.split("&&")]


def project_commands():
    """(environment, argv) of each `python ...` command of the README."""
    found = []
    for command in shell_commands():
        words = shlex.split(command)
        environment = dict(w.split("=", 1) for w in words if re.match(r"^[A-Z_]+=", w))
        words = [w for w in words if not re.match(r"^[A-Z_]+=", w)]
        if words[0] == "python":
            found.append((environment, words[1:]))
        else:
            assert words[0] in OTHER_TOOLS, f"a command this test does not know: {command}"
    return found


def program(argv):
    """The part of a command that names the program and its subcommand: `-m serving.bench`,
    `export/to_onnx.py`, `-m arena_tf.data rows`."""
    head = argv[:2] if argv[0] == "-m" else argv[:1]
    rest = argv[len(head) :]
    if rest and re.fullmatch(r"[a-z]+", rest[0]):
        head.append(rest[0])  # a subcommand, e.g. `rows`
    return head


def test_quickstart_commands_are_make_targets_and_ci_runs_the_tests():
    makefile = (ROOT / "Makefile").read_text()
    targets = re.findall(r"^make (\w+)", "\n".join(shell_commands()), flags=re.M)
    assert {"run", "test"} <= set(targets)
    for target in targets:
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_library_example_runs():
    (example,) = blocks("python")
    scope = {}
    exec(compile(example, "README.md", "exec"), scope)  # noqa: S102 (the README's own example)
    assert tuple(scope["y"].shape) == (2, 1000, 128)
    assert tuple(scope["logits"].shape) == (2, 2)


@pytest.mark.parametrize(
    "environment, argv",
    project_commands(),
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_every_command_runs_and_takes_the_flags_the_readme_gives(environment, argv):
    head = program(argv)
    shown = subprocess.run(
        [sys.executable, *head, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **environment},
        timeout=300,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", " ".join(argv)):
        # (serving.submission keeps stdout for its protocol: its help goes to stderr)
        assert flag.split("=")[0] in shown.stdout + shown.stderr, f"{' '.join(head)} has no {flag}"


def test_every_mechanism_names_its_paper_complexity_and_block():
    for line in catalogue.table().splitlines()[2:]:
        name, paper, complexity, block, _ = [cell.strip() for cell in line.strip("|").split("|")]
        assert re.search(r"\(\d{4}\)", paper), f"{name}: paper missing"
        assert complexity.startswith("O("), f"{name}: complexity missing"
        assert block.strip("`") in BLOCKS, f"{name}: block {block} is not a model.block"
