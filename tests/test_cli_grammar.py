"""One command grammar: every command's --help shows `--kebab-case` flags only, in one layout; the
old `--snake_case` spellings still work; a list flag takes commas or spaces; one precision
vocabulary (fp32, bf16, fp16, with Keras's names as synonyms)."""

import argparse
import importlib
import pathlib
import re

import pytest

from arena_tf import cli, train
from arena_tf.preset_timing import parse_args as preset_timing_args

# (module, arguments before --help): every command of the garden and each of its subcommands.
COMMANDS = [
    ("arena_tf.train", []),
    ("arena_tf.demo", []),
    ("arena_tf.data", []),
    *[("arena_tf.data", [name]) for name in ("prepare", "bench", "rows")],
    ("arena_tf.reproduce.__main__", []),
    ("arena_tf.benchmark.__main__", []),
    *[
        ("arena_tf.benchmark.__main__", [name])
        for name in ("layers", "pairs", "train", "xla", "precision", "gpu", "report", "profile")
    ],
    ("arena_tf.analysis.__main__", []),
    ("arena_tf.analysis.__main__", ["span"]),
    ("arena_tf.analysis.__main__", ["attention"]),
    ("arena_tf.preset_timing", ["measure"]),
    ("arena_tf.preset_timing", ["table"]),
    ("arena_tf.catalogue", []),
    ("arena_tf.generators.listops", []),
    ("arena_tf.generators.pathfinder", []),
    ("arena_tf.serving.bench", []),
    ("arena_tf.serving.submission", []),
    ("arena_tf.serving.bare_loop", []),
    ("arena_tf.serving.report", []),
    ("arena_tf.export.to_onnx", []),
    ("arena_tf.export.to_openvino", []),
    ("arena_tf.export.to_savedmodel", []),
    ("arena_tf.export.to_stablehlo", []),
]
ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILDS_A_PARSER = re.compile(r"ArgumentParser\(|cli\.parser\(")
NOT_COMMANDS = {"arena_tf.cli", "arena_tf.export.cli"}  # the parsers' makers
# Commands whose main() does more than parse before --help (the submission takes over stdout).
PARSE_ONLY = {
    "arena_tf.serving.submission": lambda module, argv: module.build_parser().parse_args(argv)
}
FLAG = re.compile(r"(?<![\w-])--[A-Za-z0-9][\w-]*")


def help_text(capsys, module, arguments):
    with pytest.raises(SystemExit) as exit_info:
        call = PARSE_ONLY.get(module, lambda loaded, argv: loaded.main(argv))
        call(importlib.import_module(module), [*arguments, "--help"])
    assert exit_info.value.code in (0, None)
    return capsys.readouterr().out


@pytest.mark.parametrize(
    "module, arguments", COMMANDS, ids=[" ".join([m, *a]) for m, a in COMMANDS]
)
def test_every_help_shows_kebab_case_flags_in_one_layout(capsys, module, arguments):
    text = help_text(capsys, module, arguments)
    flags = set(FLAG.findall(text))
    assert "--help" in flags and "--debug" in flags
    assert not [flag for flag in flags if "_" in flag], text
    assert " ".join(cli.GRAMMAR.split()) in " ".join(text.split())  # the one epilog


def test_every_command_is_checked_here():
    """A new command (a module building a parser) must join COMMANDS, so its --help is checked."""
    builders = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for package in ("arena_tf",)
        for path in (ROOT / package).rglob("*.py")
        if BUILDS_A_PARSER.search(path.read_text())
    }
    assert builders - NOT_COMMANDS <= {module for module, _ in COMMANDS}


@pytest.mark.parametrize("spelling", ["--data_dir=/d", "--data-dir=/d"])
def test_train_takes_both_spellings_of_a_flag(spelling):
    args = train.parse_args(
        [
            "--task=image",
            "--model=linformer",
            spelling,
            "--run_dir",
            "r",
            "--time_limit=5",
            "--cpu-devices",
            "2",
        ]
    )
    assert (args.task, args.model, args.data_dir, args.run_dir) == ("image", "linformer", "/d", "r")
    assert (args.time_limit, args.cpu_devices) == (5, 2)


def test_a_subcommand_takes_the_old_spelling_too():
    from arena_tf import data

    args = data.build_parser().parse_args(
        ["bench", "--task=listops", "--batch_size=4", "--data_dir", "d"]
    )
    assert (args.batch_size, args.data_dir) == (4, "d")


def test_generators_take_the_old_spelling_and_report_bad_flags_in_one_line(capsys):
    from arena_tf.generators import pathfinder

    args = pathfinder.parse_args(["--out_dir", "o", "--num_examples", "10"])
    assert (args.out_dir, args.num_examples) == ("o", 10)
    with pytest.raises(SystemExit) as exit_info:
        pathfinder.parse_args(["--out-dir", "o", "--nope"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("error: unrecognized arguments: --nope; expected")


@pytest.mark.parametrize("given", [["a,b"], ["a", "b"], ["a,", "b"], ["a", "--tasks", "b"]])
def test_lists_take_commas_or_spaces(given):
    parser = cli.ArgumentParser(prog="x")
    parser.add_argument("--tasks", action=cli.Items, choices=["a", "b"])
    expected = ["b"] if "--tasks" in given else ["a", "b"]  # repeated: the last one wins
    assert parser.parse_args(["--tasks", *given]).tasks == expected


def test_list_items_are_converted_and_checked_one_by_one(capsys):
    assert preset_timing_args(["measure", "--tasks", "listops", "pathx"]).tasks == [
        "listops",
        "pathx",
    ]
    parser = cli.ArgumentParser(prog="x")
    parser.add_argument("--seeds", action=cli.Items, type=int)
    assert parser.parse_args(["--seeds", "0,1", "2"]).seeds == [0, 1, 2]
    with pytest.raises(SystemExit):
        parser.parse_args(["--seeds", "0,one"])
    assert "invalid item 'one'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "given, short, keras",
    [
        ("fp32", "fp32", "float32"),
        ("float32", "fp32", "float32"),
        ("bf16", "bf16", "mixed_bfloat16"),
        ("mixed_bfloat16", "bf16", "mixed_bfloat16"),
        ("fp16", "fp16", "mixed_float16"),
        ("mixed_float16", "fp16", "mixed_float16"),
    ],
)
def test_one_precision_vocabulary_with_keras_synonyms(given, short, keras):
    assert cli.precision(given) == short and cli.keras_precision(given) == keras
    assert (
        train.parse_args(["--task=listops", "--model=full", f"--precision={given}"]).precision
        == keras
    )


def test_export_takes_precisions_in_either_vocabulary_as_a_list():
    from arena_tf.export import cli as export_cli

    parser = export_cli.parser("x", "doc")
    export_cli.add_precisions(parser, ["fp32", "bf16", "fp16"], ["fp32"], "models")
    assert parser.parse_args(["r", "--precision", "float32,mixed_float16"]).precision == [
        "fp32",
        "fp16",
    ]
    assert parser.parse_args(["r", "--precision", "fp32", "bf16"]).precision == ["fp32", "bf16"]


def test_an_unknown_precision_is_refused_by_the_parser():
    with pytest.raises(argparse.ArgumentTypeError, match="unknown precision 'int8'"):
        cli.precision("int8")


def test_training_export_benchmarks_and_serving_name_precisions_from_the_one_vocabulary():
    from arena_tf import config, precision
    from arena_tf.benchmark import gpu
    from arena_tf.export import precision as export_precision
    from arena_tf.serving import runtimes

    assert config.PRECISIONS == ("auto", "float32", "mixed_float16", "mixed_bfloat16")
    assert export_precision.POLICIES is precision.POLICIES
    assert runtimes.PRECISIONS == ("fp32", "fp16", "bf16")
    assert gpu.PRECISIONS == {"bf16": "mixed_bfloat16", "fp32": "float32"}
    assert [precision.short_name(name) for name in ("mixed_float16", "BFloat16 ")] == [
        "fp16",
        "bf16",
    ]
