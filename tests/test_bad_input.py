"""Bad input gets one clear line: each case feeds one exact bad input to a command, as a user types
it, and asserts the exit code, one line on stderr in the shared style (`error: <what>; expected
<what>; <how to fix>`) holding the documented words, and that nothing was left behind. One case of
each command runs in a new `python -m` process; the others fork from a process that has imported
TensorFlow already (tests/forked_command.py) instead of importing it again.

docs/guide/bad-input.md is generated from CASES and FAULTS (`python -m tests.test_bad_input`); a
test checks it. FAULTS are the findings that are not one bad command line (a killed writer, a second
trainer, a model answering nonsense): each names the area test that feeds that exact input, and a
test checks that it exists. Area tests (tests/training, tests/export, tests/serving, tests/tasks)
hold the finer cases.
"""

import dataclasses
import json
import os
import pathlib
from typing import Callable, Optional

import pytest

from arena_tf import settings
from arena_tf.markdown import table
from tests.forked_command import new_process
from tests.one_line import assert_one_error_line
from tests.tasks.helpers import pathfinder_set, write_listops

pytestmark = pytest.mark.slow  # starts processes

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "guide" / "bad-input.md"


@dataclasses.dataclass
class Case:
    """`setup(tmp)` makes the input files in `tmp` and returns the command's arguments after
    `python -m`; `words` must appear in the error line; `exit` is the expected status."""

    bad_input: str
    setup: Callable
    words: str
    exit: int = 2
    env: dict = dataclasses.field(default_factory=dict)  # set for the command (KERAS_BACKEND)
    file_size_limit: Optional[int] = None  # bytes, as `ulimit -f` sets it for the command


GOOD_LISTOPS = "( ( [MAX 2 9 ] ) )\t9\n"


def train(tmp, *arguments, model="full", preset="tiny"):
    """`python -m arena_tf.train` on a small hand-written ListOps set in `tmp`, its run directory
    in `tmp` too (so that "nothing left behind" covers it)."""
    data = write_listops(tmp / "listops", GOOD_LISTOPS * 3)
    return [
        "arena_tf.train",
        "--task=listops",
        f"--model={model}",
        f"--preset={preset}",
        f"--data_dir={data}",
        f"--run_dir={tmp / 'run'}",
        *arguments,
    ]


def prepare_listops(tmp, bad_row):
    data = write_listops(tmp / "listops", GOOD_LISTOPS + bad_row + "\n")
    return ["arena_tf.data", "prepare", "--task=listops", f"--data_dir={data}"]


def damaged_pathfinder(tmp, damage, count):
    """`count` generated Pathfinder images in `tmp`, `damage(dataset_dir)` applied; the dataset
    directory."""
    directory = pathfinder_set(tmp, count)
    damage(directory)
    return directory


def prepare_pathfinder(tmp, damage, count=12):
    damaged_pathfinder(tmp, damage, count)
    return ["arena_tf.data", "prepare", "--task=pathfinder", f"--data_dir={tmp}"]


def distance_baseline(tmp, damage, *flags, count=5):
    """`analysis distance-baseline` of `count` generated images, `damage(dataset_dir)` applied."""
    return [
        "arena_tf.analysis",
        "distance-baseline",
        str(damaged_pathfinder(tmp, damage, count)),
        *flags,
    ]


def intact(directory):
    """No damage."""


def last_metadata_line(change):
    """A damage: the last line of metadata/0.npy replaced by `change(its fields)` ([]: dropped)."""

    def damage(directory):
        metadata = directory / "metadata" / "0.npy"
        lines = metadata.read_text().splitlines()
        fields = change(lines[-1].split())
        metadata.write_text("\n".join(lines[:-1] + [" ".join(fields)] * bool(fields)) + "\n")

    return damage


def short_metadata_line(directory):
    with open(directory / "metadata" / "1.npy", "a") as metadata:
        metadata.write("imgs/1 sample_0.png 6\n")


def odd_sized_pathfinder_image(directory):
    """One 33 x 32 PNG among the generated 32 x 32 images."""
    from PIL import Image

    Image.new("L", (33, 32)).save(directory / "imgs/0/sample_5.png")


def split_file_a_folder(tmp):
    data = write_listops(tmp / "listops", GOOD_LISTOPS * 3)
    (data / "basic_test.tsv").unlink()
    (data / "basic_test.tsv").mkdir()
    return ["arena_tf.data", "prepare", "--task=listops", f"--data-dir={data}"]


def exported_run(tmp, **config_changes):
    """A tiny untrained run directory (model.keras + config.yaml), `config_changes` applied to
    config.yaml's sections (None removes one)."""
    import yaml

    from tests.export.conftest import write_run_dir

    run, _ = write_run_dir(tmp / "run", "full")
    saved = yaml.safe_load((run / "config.yaml").read_text())
    for section, values in config_changes.items():
        saved[section] = values if not isinstance(values, dict) else {**saved[section], **values}
        if values is None:
            del saved[section]
    (run / "config.yaml").write_text(yaml.safe_dump(saved))
    return run


def listops_model_with_pathfinder_config(tmp):
    run = exported_run(
        tmp,
        task={"name": "pathfinder"},
        model={"vocab_size": 256, "max_len": 1024, "num_classes": 2, "padding_id": None},
    )
    return ["export.to_savedmodel", str(run)]


def listops_model_under_a_pathfinder_task_section(tmp):
    run = exported_run(tmp, task={"name": "pathfinder", "max_len": None})
    return ["export.to_savedmodel", str(run)]


def non_utf8_config(tmp):
    run = exported_run(tmp)
    (run / "config.yaml").write_bytes(b"task: {name: listops}\n# caf\xe9\n")
    return ["export.to_onnx", str(run)]


def damaged_saved_model(tmp):
    """A run whose saved_model/ has current metadata (so it is reused, not exported again) but a
    saved_model.pb cut short."""
    from arena_tf.export.metadata import FORMAT_VERSION, SAVED_MODEL_FILE

    run = exported_run(tmp)
    (run / "saved_model" / SAVED_MODEL_FILE).parent.mkdir(parents=True)
    (run / "saved_model" / SAVED_MODEL_FILE).write_text(
        json.dumps({"source": str((run / "model.keras").resolve()), "format": FORMAT_VERSION})
    )
    (run / "saved_model" / "saved_model.pb").write_bytes(b"\x08\x01\x12")
    return ["export.to_onnx", str(run)]


def export_file_where_saved_model_goes(tmp):
    run = exported_run(tmp)
    (run / "saved_model_fp16").write_text("notes\n")
    return ["export.to_savedmodel", str(run)]


def export_folder_where_onnx_goes(tmp):
    run = exported_run(tmp)
    (run / "model.onnx").mkdir()
    return ["export.to_onnx", str(run)]


def bench_config_task_5(tmp):
    run = exported_run(tmp, task=5)
    (run / "saved_model").mkdir()
    return ["serving.bench", str(run), "--out", str(tmp / "out")]


def bench_results(out, **row):
    """`out`/results.jsonl holding one bench row (its key fields, then `row`)."""
    out.mkdir()
    (out / "results.jsonl").write_text(
        json.dumps(
            {
                "model": "m",
                "runtime": "tf",
                "precision": "fp32",
                "scenario": "offline",
                "status": "ok",
                **row,
            }
        )
        + "\n"
    )
    return out


def bench_out_with_results(tmp, *flags, **row):
    out = bench_results(tmp / "out", **row)
    data = write_listops(tmp / "listops", GOOD_LISTOPS * 3)
    return [
        "serving.bench",
        "--command",
        "python -c pass",
        "--task",
        "listops",
        f"--data-dir={data}",
        "--out",
        str(out),
        *flags,
    ]


def merge_key_only_row(tmp):
    (tmp / "results-1.json").write_text(
        json.dumps([{"suite": "cpu-listops", "task": "listops", "mechanism": "full", "seed": 7}])
    )
    return ["arena_tf.reproduce", "merge", str(tmp / "results-1.json")]


def merge_unknown_suite(tmp):
    row = {
        "suite": "cpu-listop",
        "task": "listops",
        "mechanism": "full",
        "seed": 0,
        "test_accuracy": 0.3,
        "best_val_accuracy": 0.3,
        "steps": 10,
        "train_seconds": 6.0,
        "device": "CPU",
        "git_commit": "abc",
        "command": "python -m arena_tf.train",
    }
    (tmp / "results-1.json").write_text(json.dumps([row]))
    return ["arena_tf.reproduce", "merge", str(tmp / "results-1.json")]


def report_truncated_metrics(tmp):
    """`benchmark report` over the repository's results, with our accuracies read from a run's
    metrics.json that was cut short; the report and its plots would go to tmp/report."""
    results = ROOT / "docs" / "results" / "efficiency"
    (tmp / "runs" / "listops-full").mkdir(parents=True)
    (tmp / "runs" / "listops-full" / "metrics.json").write_text('{"test_accuracy": 0.')
    return [
        "arena_tf.benchmark",
        "report",
        "--layers",
        str(results / "layers.json"),
        "--train",
        str(results / "train.json"),
        "--runs",
        str(tmp / "runs"),
        "--output",
        str(tmp / "report" / "report.md"),
    ]


def unfinished_run(tmp):
    (tmp / "run").mkdir()
    (tmp / "run" / "config.yaml").write_text("task: {name: listops}\n")
    return ["arena_tf.analysis", "span", str(tmp / "run")]


def text_throughput_results(tmp):
    return ["serving.report", str(bench_results(tmp / "bench", throughput="fast"))]


def other_pathfinder_set(tmp):
    from arena_tf.generators.pathfinder import INFO_FILE, release_path

    found = tmp / "pf" / release_path(32, 14)
    found.mkdir(parents=True)
    (found / INFO_FILE).write_text(json.dumps({"seed": 99}))
    return [
        "arena_tf.generators.pathfinder",
        "--out-dir",
        str(tmp / "pf"),
        "--num-examples",
        "4",
        "--processes",
        "1",
    ]


def empty_results(tmp):
    out = bench_results(tmp / "bench")
    (out / "results.jsonl").write_text("")
    (out / "results.md").write_text("| the report of an earlier run |\n")  # to be kept
    return ["serving.report", str(out)]


def empty_config_run(tmp):
    from tests.export.conftest import write_run_dir

    run_dir, _ = write_run_dir(tmp / "run", "linear")
    (run_dir / "config.yaml").write_text("")
    return ["arena_tf.analysis", "span", str(run_dir), "--examples", "4"]


def mixer_run(tmp):
    from tests.export.conftest import write_run_dir

    write_run_dir(tmp / "run", "s4d")
    return ["arena_tf.analysis", "span", str(tmp / "run")]


CASES = {
    "unknown-flag": Case(
        "a flag the command does not have",
        lambda tmp: ["arena_tf.preset_timing", "measure", "--nope"],
        "unrecognized arguments: --nope; expected the arguments in",
    ),
    "analysis-unfinished-run": Case(
        "a run directory without model.keras",
        unfinished_run,
        "holds no trained model; expected model.keras",
    ),
    "analysis-state-space-mixer": Case(
        "attention analysis of an s4d run (a state-space mixer)",
        mixer_run,
        "s4d is a state-space mixer: it has no attention weights to recover",
    ),
    "analysis-empty-run-config": Case(
        "a run directory whose config.yaml is empty (was: every default read, the full ListOps set "
        "generated, then an internal error)",
        empty_config_run,
        "config.yaml holds none of the sections task, model, train",
    ),
    "analysis-bad-count": Case(
        "`--examples 0`",
        lambda tmp: ["arena_tf.analysis", "span", str(tmp), "--examples", "0"],
        "'0' is not a whole number >= 1",
    ),
    "analysis-distance-baseline-missing": Case(
        "`distance-baseline` of a directory that does not exist",
        lambda tmp: ["arena_tf.analysis", "distance-baseline", str(tmp / "nope")],
        "nope: no such directory; expected a dataset the Pathfinder generator wrote",
    ),
    "analysis-distance-baseline-no-record": Case(
        "`distance-baseline` of a dataset without generator.json (an LRA release's)",
        lambda tmp: distance_baseline(tmp, lambda d: (d / "generator.json").unlink()),
        "no generator.json, so no seed to draw its images again",
    ),
    "analysis-distance-baseline-not-a-record": Case(
        "`distance-baseline` of a dataset whose generator.json reads `[]` (was: AttributeError)",
        lambda tmp: distance_baseline(tmp, lambda d: (d / "generator.json").write_text("[]")),
        "names a JSON list, not an object, not this Pathfinder generator",
    ),
    "analysis-distance-baseline-negative-seed": Case(
        "`distance-baseline` of a dataset whose generator.json records seed -1 (was: an internal "
        "error)",
        lambda tmp: distance_baseline(
            tmp,
            lambda d: (d / "generator.json").write_text(
                (d / "generator.json").read_text().replace('"seed": ', '"seed": -1, "was": ')
            ),
        ),
        "generator.json holds seed '-1'; expected a whole number >= 0",
    ),
    "analysis-distance-baseline-other-difficulty": Case(
        "`distance-baseline DIR --difficulty easy` of a hard dataset (the record says which)",
        lambda tmp: distance_baseline(tmp, intact, "--difficulty", "easy"),
        "expected pathfinder32/curv_baseline images, as --size and --difficulty say",
    ),
    "analysis-distance-baseline-fewer-images": Case(
        "`distance-baseline` of a dataset whose metadata lists one image less than it records",
        lambda tmp: distance_baseline(tmp, last_metadata_line(lambda fields: [])),
        "4 images in its metadata where its generator.json records 5",
    ),
    "analysis-distance-baseline-other-label": Case(
        "`distance-baseline` of a dataset with a label the generator did not draw",
        lambda tmp: distance_baseline(
            tmp,
            last_metadata_line(lambda fields: [*fields[:3], str(1 - int(fields[3])), *fields[4:]]),
        ),
        "in the metadata, but image 4 drawn again with seed 0 has label",
    ),
    "analysis-distance-baseline-empty-split": Case(
        "`distance-baseline` of 2 images: no test split (was: nan%)",
        lambda tmp: distance_baseline(tmp, intact, count=2),
        "its test split holds no image (2 images in all, split 80/10/10)",
    ),
    "generator-distance-baseline-count": Case(
        "`generators.pathfinder --distance-baseline --count 1` (was: an internal error)",
        lambda tmp: ["arena_tf.generators.pathfinder", "--distance-baseline", "--count", "1"],
        "--distance-baseline --count 1 leaves nothing to fit or to score",
    ),
    "generator-no-examples": Case(
        "`generators.pathfinder --out-dir DIR --num-examples 0` (was: exit 0 and an empty dataset)",
        lambda tmp: [
            "arena_tf.generators.pathfinder",
            "--out-dir",
            str(tmp / "pf"),
            "--num-examples",
            "0",
        ],
        "argument --num-examples: '0' is not a whole number >= 1",
    ),
    "generator-preview-is-a-directory": Case(
        "`generators.pathfinder --preview DIR` naming a folder (was: an internal error)",
        lambda tmp: ["arena_tf.generators.pathfinder", "--preview", str(tmp)],
        "is a directory; expected the path of a file to write; name a file, e.g. --preview",
    ),
    "generator-out-dir-under-a-file": Case(
        "`generators.listops --out-dir FILE/x`, a file on its way (was: an internal error)",
        lambda tmp: (
            (tmp / "notes").write_text("")
            or ["arena_tf.generators.listops", "--out-dir", str(tmp / "notes" / "x")]
        ),
        "notes is a file, not a folder; expected a folder",
    ),
    "generator-pathfinder-other-data-there": Case(
        "`generators.pathfinder --out-dir DIR` where DIR holds a set of another seed (was: an "
        "internal error, cut off before it said what differs)",
        other_pathfinder_set,
        "exists but holds other data than asked for (config ",
    ),
    "generator-out-dir-cannot-be-made": Case(
        "`generators.pathfinder --out-dir` where no folder can be made (/proc; was: an internal "
        "error)",
        lambda tmp: [
            "arena_tf.generators.pathfinder",
            "--out-dir",
            "/proc/arena_tf_data",
            "--num-examples",
            "4",
        ],
        "--out-dir /proc/arena_tf_data: cannot write there",
    ),
    "benchmark-output-is-a-directory": Case(
        "`benchmark layers --output DIR`, a folder (was: an internal error after the measurement)",
        lambda tmp: ["arena_tf.benchmark", "layers", "--output", str(tmp)],
        "is a directory; expected the path of a file to write; name a file, e.g. --output",
    ),
    "benchmark-gpu-report-of-another-benchmark": Case(
        "`benchmark gpu --report-only` of another benchmark's JSON (was: KeyError)",
        lambda tmp: (
            (tmp / "layers.json").write_text('{"benchmark": "layers", "rows": []}')
            and [
                "arena_tf.benchmark",
                "gpu",
                "--report-only",
                "--output",
                str(tmp / "layers.json"),
                "--report",
                str(tmp / "gpu.md"),
            ]
        ),
        "holds no results of `benchmark gpu`",
    ),
    "span-out-is-a-directory": Case(
        "`analysis span RUN --out DIR`, a folder (was: an internal error after the measurement)",
        lambda tmp: ["arena_tf.analysis", "span", str(tmp / "run"), "--out", str(tmp)],
        "is a directory; expected the path of a file to write; name a file, e.g. --out",
    ),
    "preset-timing-out-under-a-file": Case(
        "`preset_timing measure --out FILE/x` (was: exit 0 and a 'not measured' row)",
        lambda tmp: (
            (tmp / "notes").write_text("")
            or [
                "arena_tf.preset_timing",
                "measure",
                "--tasks",
                "listops",
                "--out",
                str(tmp / "notes" / "x"),
                "--results",
                str(tmp / "presets.json"),
            ]
        ),
        "notes is a file, not a folder; expected a folder, or a path whose folders are folders; "
        "choose another --out",
    ),
    "preset-timing-table-not-json": Case(
        "`preset_timing table --results` of a file cut short (was: an internal error)",
        lambda tmp: (
            (tmp / "presets.json").write_text('{"rows": [')
            and ["arena_tf.preset_timing", "table", "--results", str(tmp / "presets.json")]
        ),
        "presets.json cannot be read as JSON",
    ),
    "preset-timing-table-wrong-json": Case(
        "`preset_timing table --results` of another command's JSON (was: an internal error, "
        "KeyError: 'rows')",
        lambda tmp: (
            (tmp / "metrics.json").write_text('{"test_accuracy": 0.5}')
            and ["arena_tf.preset_timing", "table", "--results", str(tmp / "metrics.json")]
        ),
        "metrics.json is not a results file of preset_timing",
    ),
    "preset-timing-unknown-model": Case(
        "`preset_timing measure --model nope` (was: a 'not measured' row written, exit 0)",
        lambda tmp: [
            "arena_tf.preset_timing",
            "measure",
            "--tasks",
            "listops",
            "--model",
            "nope",
            "--out",
            str(tmp / "out"),
            "--results",
            str(tmp / "presets.json"),
        ],
        "unknown model 'nope'; expected one of bigbird",
    ),
    "preset-timing-out-holding-data": Case(
        "`preset_timing measure --out DIR` where DIR holds a data folder of its own (was: "
        "DIR/data/listops deleted)",
        lambda tmp: (
            write_listops(tmp / "data" / "listops", GOOD_LISTOPS)
            and [
                "arena_tf.preset_timing",
                "measure",
                "--tasks",
                "listops",
                "--out",
                str(tmp),
                "--results",
                str(tmp / "presets.json"),
            ]
        ),
        "holds files preset_timing did not write; expected a new or empty folder",
    ),
    "benchmark-report-output-is-an-input": Case(
        "`benchmark report --layers FILE --output FILE` (was: the results replaced by the report)",
        lambda tmp: (
            (tmp / "layers.json").write_text("[]")
            and [
                "arena_tf.benchmark",
                "report",
                "--layers",
                str(tmp / "layers.json"),
                "--output",
                str(tmp / "layers.json"),
            ]
        ),
        "layers.json is one of the files this command reads",
    ),
    "benchmark-train-negative-steps": Case(
        "`benchmark train --steps -5` (was: a failed row written, exit 0)",
        lambda tmp: [
            "arena_tf.benchmark",
            "train",
            "--mechanisms",
            "linear",
            "--lengths",
            "64",
            "--steps",
            "-5",
            "--output",
            str(tmp / "train.json"),
        ],
        "argument --steps: '-5' is not a whole number >= 1",
    ),
    "serving-report-without-results": Case(
        "`serving.report DIR` of a directory without results.jsonl",
        lambda tmp: (tmp / "bench").mkdir() or ["serving.report", str(tmp / "bench")],
        "results.jsonl does not exist",
    ),
    "serving-report-text-where-a-number-goes": Case(
        '`serving.report DIR` whose results.jsonl holds `"throughput": "fast"` (was: an '
        "internal error)",
        text_throughput_results,
        "holds throughput 'fast'; expected a number",
    ),
    "serving-report-list-where-a-name-goes": Case(
        '`serving.report DIR` whose results.jsonl row names its model `["m"]` (was: an '
        "internal error, TypeError)",
        lambda tmp: ["serving.report", str(bench_results(tmp / "bench", model=["m"]))],
        "results.jsonl:1 holds model \"['m']\"; expected a name (a string) for model",
    ),
    "serving-report-unknown-status": Case(
        "`serving.report DIR` whose results.jsonl row has status `weird` (was: reported as if "
        "measured)",
        lambda tmp: ["serving.report", str(bench_results(tmp / "bench", status="weird"))],
        "holds status 'weird'; expected one of ok, unsupported, failed, invalid",
    ),
    "serving-report-empty-results": Case(
        "`serving.report DIR` whose results.jsonl is empty (was: its results.md and results.csv "
        "replaced by empty ones, exit 0)",
        empty_results,
        "results.jsonl holds no rows; expected one JSON row a line",
    ),
    "benchmark-report-without-results": Case(
        "no benchmark results to report",
        lambda tmp: [
            "arena_tf.benchmark",
            "report",
            "--layers",
            str(tmp / "a.json"),
            "--train",
            str(tmp / "b.json"),
            "--pairs",
            str(tmp / "c.json"),
            "--output",
            str(tmp / "out.md"),
        ],
        "expected the JSON results of the benchmarks",
    ),
    "export-missing-run": Case(
        "an export of a run directory that does not exist",
        lambda tmp: ["export.to_savedmodel", str(tmp / "nope")],
        "does not exist; expected a run directory holding model.keras",
    ),
    "export-bad-opset": Case(
        "`--opset 99`",
        lambda tmp: ["export.to_onnx", str(tmp / "nope"), "--opset", "99"],
        "opset 99 is not supported; expected 13 to 18",
    ),
    "export-openvino-precision": Case(
        "`export/to_openvino.py --precision bf16` (OpenVINO IRs are FP32 and FP16)",
        lambda tmp: ["export.to_openvino", str(tmp / "nope"), "--precision", "bf16"],
        "invalid choice: 'bf16'",
    ),
    "train-set-invalid-yaml": Case(
        "`--set 'train.batch_size=[1,'` (YAML that does not parse)",
        lambda tmp: train(tmp, "--set", "train.batch_size=[1,"),
        "the value '[1,' is not valid YAML",
    ),
    "train-set-duplicate-key": Case(
        "`--set 'model.attention_params={projected_length: 8, projected_length: 9}'`",
        lambda tmp: train(
            tmp,
            "--set",
            "model.attention_params={projected_length: 8, projected_length: 9}",
            model="linformer",
        ),
        "gives the key projected_length twice; expected each key once",
    ),
    "train-shape-mismatch": Case(
        "`--set model.max_len=100` against the tiny preset's data of 256 tokens (no run directory "
        "is made)",
        lambda tmp: train(tmp, "--set", "model.max_len=100"),
        "disagrees with the listops data, whose examples are 256 tokens long",
    ),
    "train-intensity-on-text": Case(
        "`--set model.token_embedding=intensity` on ListOps (its tokens are symbols, not pixels)",
        lambda tmp: train(tmp, "--set", "model.token_embedding=intensity"),
        "reads token ids as pixel brightness, but listops's tokens are not pixels",
    ),
    "train-grid-positions-on-text": Case(
        "`--set model.position_embedding=sinusoidal_2d` on ListOps (no image rows and columns)",
        lambda tmp: train(tmp, "--set", "model.position_embedding=sinusoidal_2d"),
        "gives each token an image row and column, but these tokens are not pixels",
    ),
    "train-run-dir-holding-a-config-folder": Case(
        "`--run-dir` holding a folder named config.yaml (was: an internal error)",
        lambda tmp: (tmp / "run" / "config.yaml").mkdir(parents=True) or train(tmp),
        "config.yaml is a folder, where the run writes a file",
    ),
    "prepare-listops-negative-split": Case(
        "`--set task.params.generator_spec.train=-3` (was: generated, then blamed the empty file)",
        lambda tmp: [
            "arena_tf.data",
            "prepare",
            "--task=listops",
            f"--data-dir={tmp / 'gen'}",
            "--set",
            "task.params.generator_spec.train=-3",
        ],
        "ListOps split sizes must be whole numbers >= 1; got train=-3",
    ),
    "prepare-listops-one-column": Case(
        "a ListOps TSV row with one column",
        lambda tmp: prepare_listops(tmp, "[MIN 3 4 ]"),
        "basic_train.tsv:3: 1 tab-separated column instead of 2 ('[MIN 3 4 ]'); expected "
        "'EXPRESSION<tab>VALUE'",
    ),
    "prepare-listops-unbalanced": Case(
        "a ListOps TSV row with unbalanced brackets",
        lambda tmp: prepare_listops(tmp, "[MIN 3 4 ] ]\t3"),
        "basic_train.tsv:3: unbalanced brackets (1 operator, 2 ']')",
    ),
    "prepare-pathfinder-metadata": Case(
        "a Pathfinder metadata line with too few fields",
        lambda tmp: prepare_pathfinder(tmp, short_metadata_line),
        "metadata/1.npy:7: malformed line 'imgs/1 sample_0.png 6'",
    ),
    "prepare-pathfinder-empty-png": Case(
        "a zero-byte PNG among 12 images (above the 1% that may be skipped)",
        lambda tmp: prepare_pathfinder(
            tmp, lambda directory: (directory / "imgs/0/sample_1.png").write_bytes(b"")
        ),
        "1 of 12 images in",
    ),
    "bench-missing-run": Case(
        "`serving.bench` on a run directory that does not exist",
        lambda tmp: ["serving.bench", str(tmp / "nope")],
        "does not exist; expected a directory written by python -m arena_tf.train",
    ),
    "bench-unexported-run": Case(
        "`serving.bench` on a run directory that was never exported",
        lambda tmp: (tmp / "run").mkdir() or ["serving.bench", str(tmp / "run")],
        "holds no exported model; expected one of saved_model",
    ),
    "presets-unknown-task": Case(
        "an unknown task in `--tasks`",
        lambda tmp: ["arena_tf.preset_timing", "measure", "--tasks", "nope", "--out", str(tmp)],
        "unknown task 'nope' in --tasks",
    ),
    # Settings, memory, the error boundary, shared outputs, data on entry.
    "train-unknown-task-parameter": Case(
        "`--set task.params.bogus=1`, a parameter the task does not take (was: an internal error)",
        lambda tmp: train(tmp, "--set", "task.params.bogus=1"),
        "task listops has no parameter bogus; expected task.params among: generator_spec",
    ),
    "train-set-task-name": Case(
        "`--task=listops --set task.name=image` (was: trained image in a run named for listops)",
        lambda tmp: train(tmp, "--set", "task.name=image"),
        "--set task.name=image: sets task.name to 'image', but --task chose 'listops'; expected "
        "--task alone to pick the task; pass --task=image instead",
    ),
    "train-preset-path": Case(
        "`--preset=../tasks/listops`, a path rather than a preset's name (was: read the task's "
        "file as a preset)",
        lambda tmp: train(tmp, preset="../tasks/listops"),
        "unknown preset '../tasks/listops'; expected one of cpu, tiny",
    ),
    "train-learning-rate-nan": Case(
        "`--set train.learning_rate=.nan` (NaN passes `x <= 0`; every setting's range is declared "
        "once, in arena_tf/settings.py)",
        lambda tmp: train(tmp, "--set", "train.learning_rate=.nan"),
        "train.learning_rate=nan is invalid; expected in (0, infinity)",
    ),
    "train-learning-rate-inf": Case(
        "`--set train.learning_rate=.inf`",
        lambda tmp: train(tmp, "--set", "train.learning_rate=.inf"),
        "train.learning_rate=inf is invalid",
    ),
    "train-negative-grad-clip": Case(
        "`--set train.grad_clip=-1` (was: trained with no clipping)",
        lambda tmp: train(tmp, "--set", "train.grad_clip=-1"),
        "train.grad_clip=-1 is invalid; expected in (0, infinity), or null (no clipping)",
    ),
    "train-huge-batch": Case(
        "`--set train.batch_size=1000000000` (was: an int32 overflow in a shape)",
        lambda tmp: train(tmp, "--set", "train.batch_size=1000000000"),
        "train.batch_size=1000000000 is invalid; expected in [1, 1,048,576]",
    ),
    "train-jax-negative-eval-batches": Case(
        "`KERAS_BACKEND=jax ... --set train.eval_batches=-5` (TensorFlow took -5 as all, JAX "
        "failed in islice; both refuse it now)",
        lambda tmp: train(tmp, "--set", "train.eval_batches=-5"),
        "train.eval_batches=-5 is invalid; expected in [1, 2,147,483,647], or null (every batch",
        env={"KERAS_BACKEND": "jax"},
    ),
    "train-projection-past-the-input": Case(
        "`--set model.attention_params.projected_length=100000` on 256-token inputs (was: 17.6 GB, "
        "killed by the kernel)",
        lambda tmp: train(
            tmp, "--set", "model.attention_params.projected_length=100000", model="linformer"
        ),
        "model.attention_params.projected_length=100000 is longer than the input",
    ),
    "train-memory-guard": Case(
        "`--set train.batch_size=65000` on the tiny preset: the memory guard estimates hundreds "
        "of GB, more than the machine has",
        lambda tmp: train(tmp, "--set", "train.batch_size=65000"),
        "GB of memory at its peak",
    ),
    "train-keras-backend-torch": Case(
        "`KERAS_BACKEND=torch python -m arena_tf.train ...`, a Keras backend arena_tf does not run "
        "on (was: a traceback ending in `No module named 'torch'`)",
        lambda tmp: train(tmp),
        "KERAS_BACKEND='torch' is a Keras backend arena_tf does not run on",
        env={"KERAS_BACKEND": "torch"},
    ),
    "train-misspelt-keras-backend": Case(
        "`KERAS_BACKEND=tensorfow python -m arena_tf.train ...` (caught before Keras is imported)",
        lambda tmp: train(tmp),
        "KERAS_BACKEND='tensorfow' is not a Keras backend",
        env={"KERAS_BACKEND": "tensorfow"},
    ),
    "benchmark-zero-length": Case(
        "`python -m arena_tf.benchmark layers --lengths 0` (was: exit 0)",
        lambda tmp: ["arena_tf.benchmark", "layers", "--lengths", "0"],
        "invalid item '0' ('0' is not a whole number >= 1)",
    ),
    "benchmark-report-truncated-metrics": Case(
        "`benchmark report` with a run's metrics.json cut short (was: a traceback after four "
        "plots; now no plot and no page)",
        report_truncated_metrics,
        "metrics.json cannot be read as JSON",
    ),
    "export-non-utf8-config": Case(
        "`export/to_onnx.py` on a run whose config.yaml is not UTF-8",
        non_utf8_config,
        "config.yaml: not UTF-8 text",
    ),
    "export-model-of-another-task": Case(
        "a ListOps model.keras with a Pathfinder config.yaml (was: exported, parity passed, "
        "metadata naming pathfinder)",
        listops_model_with_pathfinder_config,
        "does not match",
    ),
    "export-task-section-of-another-task": Case(
        "a ListOps model.keras whose config.yaml names Pathfinder in its task section only (was: "
        "exported, parity passed on generated ids, metadata naming pathfinder)",
        listops_model_under_a_pathfinder_task_section,
        "vocab_size 16 vs 256 (pathfinder's)",
    ),
    "export-config-without-model-section": Case(
        "`export/to_onnx.py` on a run whose config.yaml has no model section (was: exported, the "
        "check that model.keras is the config's model skipped)",
        lambda tmp: ["export.to_onnx", str(exported_run(tmp, model=None))],
        "config.yaml: no model section; expected the config.yaml written by",
    ),
    "export-config-of-unknown-task": Case(
        "`export/to_onnx.py` on a run whose config.yaml names a task this version does not know",
        lambda tmp: ["export.to_onnx", str(exported_run(tmp, task={"name": "nope"}))],
        "config.yaml: unknown task 'nope'; expected the config.yaml written by",
    ),
    "export-damaged-saved-model": Case(
        "`export/to_onnx.py` on a run whose saved_model/ (current, so reused) has a saved_model.pb "
        "cut short (was: exit 1, 'tf2onnx could not convert ...; report ... as a bug')",
        damaged_saved_model,
        "saved_model (OSError: Cannot parse file",
    ),
    "export-file-size-limit": Case(
        "`ulimit -f 200` (100 KiB) under `export/to_savedmodel.py`: the SavedModel write fails "
        "inside TensorFlow",
        lambda tmp: ["export.to_savedmodel", str(exported_run(tmp))],
        "File too large",
        exit=1,
        file_size_limit=200 * 512,
    ),
    "export-file-where-saved-model-goes": Case(
        "a file named saved_model_fp16 in the run directory (was: exit 1 with an errno line after "
        "the FP32 and BF16 SavedModels were written)",
        export_file_where_saved_model_goes,
        "saved_model_fp16 is a file, where a folder is to be written",
    ),
    "export-folder-where-onnx-goes": Case(
        "a folder named model.onnx in the run directory (refused before the conversion)",
        export_folder_where_onnx_goes,
        "model.onnx is a folder, where a file is to be written",
    ),
    "bench-config-task-5": Case(
        "`serving.bench` on a run whose config.yaml reads `task: 5`",
        bench_config_task_5,
        "section task holds 5, not keys and values",
    ),
    "bench-timeout-nan": Case(
        "`serving.bench --timeout nan`",
        lambda tmp: [
            "serving.bench",
            "--command",
            "python -c pass",
            "--task",
            "listops",
            "--timeout",
            "nan",
            "--out",
            str(tmp / "out"),
        ],
        "--timeout=nan is not positive",
    ),
    "bench-poisson-mean-nan": Case(
        "`serving.bench --poisson-mean nan`",
        lambda tmp: [
            "serving.bench",
            "--command",
            "python -c pass",
            "--task",
            "listops",
            "--poisson-mean",
            "nan",
            "--out",
            str(tmp / "out"),
        ],
        "--poisson-mean=nan is not positive",
    ),
    "bench-out-holds-results": Case(
        "`serving.bench --out DIR` where DIR holds another run's results.jsonl (was: replaced "
        "without a word)",
        bench_out_with_results,
        "holds another run's results (results.jsonl, 1 row); expected an empty or new directory, "
        "or --append / --overwrite",
    ),
    "bench-append-text-throughput": Case(
        '`serving.bench --append` to a results.jsonl holding `"throughput": "fast"` (was: an '
        "internal error after measuring)",
        lambda tmp: bench_out_with_results(tmp, "--append", throughput="fast"),
        "holds throughput 'fast'; expected a number (or null) for throughput, as serving.bench "
        "writes; fix or delete that row, or pass --overwrite",
    ),
    "reproduce-merge-key-only-row": Case(
        "`reproduce merge` of a row holding only its key fields (was: written, then every report "
        "failed with KeyError)",
        merge_key_only_row,
        "row 0 (cpu-listops/listops/full/7) is not a whole result: no test_accuracy",
    ),
    "reproduce-merge-unknown-suite": Case(
        "`reproduce merge` of a whole row of a suite no file defines (was: merged, and the "
        "report gained its section)",
        merge_unknown_suite,
        "has a row of suite 'cpu-listop', which no suite file defines",
    ),
    "data-rows-out-directory": Case(
        "`python -m arena_tf.data rows ... --out EXISTING_DIR` (was: exit 1)",
        lambda tmp: (
            (tmp / "existing").mkdir()
            or [
                "arena_tf.data",
                "rows",
                "--task=listops",
                f"--data-dir={write_listops(tmp / 'listops', GOOD_LISTOPS * 3)}",
                "--out",
                str(tmp / "existing"),
            ]
        ),
        "is a directory; expected the path of a file to write",
    ),
    "data-bench-batch-past-memory": Case(
        "`python -m arena_tf.data bench --batch-size 1000000000` (was: killed by std::bad_alloc, "
        "exit 134)",
        lambda tmp: [
            "arena_tf.data",
            "bench",
            "--task=listops",
            f"--data-dir={write_listops(tmp / 'listops', GOOD_LISTOPS * 3)}",
            "--batch-size",
            "1000000000",
        ],
        "--batch-size 1000000000 needs about 24000.0 GB for 3 batches of 2000-token inputs",
    ),
    "data-rows-out-a-split-file": Case(
        "`python -m arena_tf.data rows --data-dir DIR --out DIR/basic_test.tsv` (was: the split's "
        "file replaced by its own rows as JSON, exit 0)",
        lambda tmp: [
            "arena_tf.data",
            "rows",
            "--task=listops",
            f"--data-dir={write_listops(tmp / 'listops', GOOD_LISTOPS * 3)}",
            "--out",
            str(tmp / "listops" / "basic_test.tsv"),
        ],
        "basic_test.tsv is a file of the data directory",
    ),
    "prepare-listops-split-file-a-folder": Case(
        "`data prepare --task=listops` where basic_test.tsv is a folder (was: 'found only "
        "basic_train.tsv, basic_val.tsv', the folder unnamed)",
        split_file_a_folder,
        "basic_test.tsv is a folder, where the data file "
        "basic_test.tsv is read; expected the file basic_test.tsv, or nothing of that name",
    ),
    "prepare-pathfinder-odd-size": Case(
        "one 33 x 32 PNG among 160 Pathfinder images (was: stopped training at step 1 with "
        "TensorFlow's reshape message)",
        lambda tmp: prepare_pathfinder(tmp, odd_sized_pathfinder_image, count=160),
        "1 of 160 images in",
    ),
}


@dataclasses.dataclass
class Fault:
    """A finding that is not one bad command line: what happens, and the test that shows it."""

    fault: str
    outcome: str
    test: str  # path::function


FAULTS = [
    Fault(
        "a second trainer on a run directory in use",
        "one line naming the holder's pid, exit 2",
        "tests/training/test_run_dir.py::test_a_second_trainer_on_a_busy_run_dir_is_refused_naming_the_pid",
    ),
    Fault(
        "the lock file of a killed trainer",
        "no effect: the next run takes the directory",
        "tests/training/test_run_dir.py::test_a_stale_lock_of_a_dead_trainer_does_not_block",
    ),
    Fault(
        "a start refused by validation, then the corrected rerun",
        "nothing written; the rerun trains",
        "tests/training/test_run_dir.py::"
        "test_a_start_refused_by_validation_leaves_nothing_and_the_corrected_rerun_proceeds",
    ),
    Fault(
        "a truncated newest checkpoint",
        "one warning line; resumes from the newest intact one",
        "tests/training/test_run_dir.py::"
        "test_a_truncated_newest_checkpoint_gives_way_to_the_newest_intact_one",
    ),
    Fault(
        "SIGKILL mid-training, then a rerun",
        "resumes bit-exact",
        "tests/training/test_resume.py::test_resumed_run_ends_with_the_uninterrupted_weights",
    ),
    Fault(
        "an export killed mid-write",
        "its temporaries removed by the next export",
        "tests/export/test_leftovers.py::test_the_next_export_removes_what_a_killed_export_left",
    ),
    Fault(
        "a reduced precision failing its parity check",
        "FP32 written, the precision reported with its figure, exit 0",
        "tests/export/test_atomic_and_errors.py::test_refused_reduced_precisions_do_not_stop_fp32",
    ),
    Fault(
        "token id -1 or past the vocabulary to the export runners",
        "one line, no logits",
        "tests/export/test_contract.py::test_runners_refuse_ids_outside_the_vocabulary_in_one_line",
    ),
    Fault(
        "`serving.bench --runtime tensorrt` on a CPU-only machine",
        "one line 'nothing to measure', exit 1, nothing written",
        "tests/serving/test_bench.py::"
        "test_nothing_to_measure_is_one_line_exit_1_and_writes_nothing",
    ),
    Fault(
        "a model answering outputs outside the label set",
        "the row is invalid, not timed",
        "tests/serving/test_bench.py::test_nonsense_outputs_of_the_right_count_make_invalid_rows",
    ),
    Fault(
        "an offline request naming a path outside the submission's --offline-dir",
        "refused: Pentathlon's error sentinel and exit 1; the bench reports the row and goes on",
        "tests/serving/test_protocol.py::"
        "test_worker_refuses_offline_files_outside_its_offline_dir_and_goes_on",
    ),
    Fault(
        "NaN, the infinities, negatives, zero and huge values in every numeric setting "
        "(Hypothesis)",
        "refused in one line naming the setting, unless the range below accepts the value",
        "tests/test_bad_input_settings.py::test_each_numeric_setting_is_accepted_exactly_in_its_declared_range",
    ),
    Fault(
        "an exception nobody expected, inside any command",
        "one line `internal error: <type>: <message>; ... rerun with --debug`, exit 1",
        "tests/test_bad_input_boundary.py::test_an_unexpected_exception_is_one_internal_error_line_exit_1",
    ),
    Fault(
        "memory that runs out inside a command (`export/to_onnx.py RUN --examples 1000000000`)",
        "one line `out of memory (...)`, exit 1",
        "tests/test_bad_input_boundary.py::test_memory_that_runs_out_is_one_line_exit_1",
    ),
    Fault(
        "Ctrl-C inside a command",
        "one line, exit 130",
        "tests/test_bad_input_boundary.py::test_ctrl_c_inside_a_command_is_one_line_and_130",
    ),
    Fault(
        "Ctrl-C while a command imports TensorFlow",
        "the same line; the process ends by SIGINT",
        "tests/test_bad_input_boundary.py::test_ctrl_c_while_a_command_imports_is_one_line",
    ),
    Fault(
        "`benchmark precision` that measured no row (every one failed or timed out)",
        "one line, exit 1, the results written (was: exit 0)",
        "tests/benchmark/"
        "test_precision_benchmark.py::test_when_no_row_could_be_measured_it_says_so_and_exits_1",
    ),
    Fault(
        "`benchmark gpu` whose every row `--memory-cap-gb` skipped",
        "one line, exit 1, the results written (was: exit 0)",
        "tests/benchmark/test_gpu_benchmark.py::"
        "test_when_every_row_is_skipped_it_says_so_and_exits_1",
    ),
    Fault(
        "`benchmark precision` under KERAS_BACKEND=jax",
        "refused in one line before measuring (was: every row failed after 90 s)",
        "tests/benchmark/test_precision_benchmark.py::test_under_jax_it_refuses_before_measuring",
    ),
    Fault(
        "a damaged archive under docs/results/reproduction/paused/",
        "one line naming the archive and the fix (was: internal error: ReadError)",
        "tests/training/test_reproduce.py::test_a_damaged_paused_archive_is_one_line_naming_it",
    ),
    Fault(
        "`reproduce pack` of a checkpoint that cannot be read",
        "one line naming the checkpoint and the fix (was: packed, exit 0)",
        "tests/training/test_reproduce.py::test_pack_refuses_a_checkpoint_that_cannot_be_read",
    ),
    Fault(
        "a bench or submission of an artifact exported before the run trained on",
        "refused in one line naming the exporter to run again (was: the earlier model served)",
        "tests/serving/test_runtimes.py::test_an_artifact_of_an_earlier_model_keras_is_not_served",
    ),
    Fault(
        "a YAML alias (`*name`) in a config file or a --set value, e.g. an 800-byte alias bomb",
        "one line naming the alias (was: memory grew without bound)",
        "tests/test_config_loading.py::test_yaml_aliases_are_refused_before_they_expand",
    ),
    Fault(
        "a garbage `checkpoints/checkpoint` state file in a run being resumed",
        "one line naming it, nothing written (was: internal error after config.yaml was rewritten)",
        "tests/training/test_errors.py::"
        "test_a_garbage_checkpoint_state_file_is_one_line_before_anything_is_written",
    ),
    Fault(
        "Ctrl-C while an export script imports TensorFlow or JAX",
        "the same line; the process ends by SIGINT (was: a 20-70 line traceback)",
        "tests/test_bad_input_boundary.py::test_ctrl_c_while_an_export_script_imports_is_one_line",
    ),
    Fault(
        "Ctrl-C during `export/to_savedmodel.py`",
        "one line, exit 130, no artifact and no temporary left",
        "tests/test_bad_input_boundary.py::test_ctrl_c_during_an_export_leaves_nothing_but_the_run",
    ),
    Fault(
        "`python -m arena_tf.data rows ... | head -c 100`",
        "ends quietly, exit 141 (was: a broken-pipe error, exit 1)",
        "tests/test_bad_input_boundary.py::test_rows_cut_short_by_head_end_quietly_with_141",
    ),
    Fault(
        "`serving.submission` on bad input",
        "stdout: the protocol's sentinel and traceback; stderr: the one line",
        "tests/test_bad_input_boundary.py::"
        "test_the_submission_tells_stderr_in_one_line_and_stdout_keeps_the_protocol",
    ),
    Fault(
        "two `serving.bench` runs given the same --out",
        "the second is refused naming the first's pid, exit 2 (was: the first's rows lost)",
        "tests/test_bad_input_boundary.py::test_a_second_bench_on_the_same_out_is_refused_naming_the_holder",
    ),
    Fault(
        "training into a run directory holding a trained model.keras but no checkpoint",
        "refused, the directory left as it was (was: the model replaced, its exports left "
        "beside the new one, exit 0)",
        "tests/training/test_run_dir.py::"
        "test_a_trained_model_without_its_checkpoints_is_not_replaced",
    ),
    Fault(
        "`serving.bench --data-dir DIR` where DIR holds no data of the task",
        "refused in one "
        "line before --out is made (was: exit 1 and a results directory that blocked the "
        "corrected rerun)",
        "tests/serving/test_bench.py::"
        "test_a_data_dir_without_the_split_is_refused_before_anything_is_written",
    ),
    Fault(
        "`serving.bench --append` / `--overwrite` on a --out holding results",
        "the earlier rows kept / replaced; without either, refused",
        "tests/test_bad_input_boundary.py::test_the_bench_keeps_or_replaces_earlier_rows_only_when_told",
    ),
    Fault(
        "`reproduce merge` of a partial row; a results.json holding one",
        "refused in one line "
        "before anything is written; `reproduce report` names the row instead of a KeyError",
        "tests/test_bad_input_boundary.py::test_merge_of_a_partial_row_leaves_results_json_as_it_was_and_reports_say_why",
    ),
    Fault(
        "two runs started side by side that both generate the same missing data",
        "the second waits for the first in one line ('waiting for pid N, which is generating "
        "pathfinder32/curv_contour_length_9 in data/pathfinder'), then reads what it wrote",
        "tests/tasks/test_generation_lock.py::test_a_waiting_caller_says_whom_it_waits_for",
    ),
    Fault(
        "a CPU run whose estimated peak memory exceeds what the machine has available",
        "refused before its first step with the estimate and the memory available, exit 2",
        "tests/test_bad_input_boundary.py::test_the_memory_guard_refuses_with_the_estimate_and_the_memory_available",
    ),
    Fault(
        "a benchmark configuration larger than the memory available",
        "skipped with the estimate and the memory available, never killed by the kernel",
        "tests/test_bad_input_boundary.py::test_the_benchmark_skips_a_configuration_larger_than_the_memory_available",
    ),
    Fault(
        "Pathfinder images of another size or mode",
        "refused by `prepare`, naming the first files and their count",
        "tests/test_bad_input_boundary.py::test_images_of_another_size_or_mode_do_not_fit_pathfinder",
    ),
]


def files_under(path):
    """{path under `path`: its bytes (None for a folder)}: what a refused command must leave as
    it was."""
    return {p.relative_to(path): p.read_bytes() if p.is_file() else None for p in path.rglob("*")}


# One case of each command runs as a user starts it, `python -m` in a new process (what TensorFlow
# prints while importing shows there); the others fork from tests/forked_command.py's server, which
# has imported TensorFlow once (a case naming another Keras backend starts a process there too).
THROUGH_PYTHON_M = {
    "analysis-unfinished-run",
    "analysis-distance-baseline-missing",
    "bench-missing-run",
    "benchmark-zero-length",
    "data-rows-out-directory",
    "export-bad-opset",
    "export-missing-run",
    "export-openvino-precision",
    "generator-out-dir-cannot-be-made",
    "generator-out-dir-under-a-file",
    "prepare-listops-one-column",
    "unknown-flag",
    "reproduce-merge-key-only-row",
    "serving-report-without-results",
    "train-learning-rate-nan",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_line_with_its_exit_code_and_leaves_nothing(name, tmp_path, request):
    case = CASES[name]
    work, cwd = tmp_path / "input", tmp_path / "cwd"
    work.mkdir()
    cwd.mkdir()
    arguments = case.setup(work)
    before = files_under(work)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **case.env}
    run = new_process if name in THROUGH_PYTHON_M else request.getfixturevalue("command_server").run
    result = run(["-m", *arguments], cwd=cwd, env=env, file_size_limit=case.file_size_limit)
    assert result.returncode == case.exit, result.stderr[-3000:]
    assert_one_error_line(result.stderr, case.words)
    assert files_under(work) == before, "the command left files behind or changed its input"
    assert not any(cwd.iterdir()), "the command wrote into the working directory"


def test_the_cases_run_on_python_m_exist():
    assert THROUGH_PYTHON_M <= set(CASES)


@pytest.mark.parametrize("fault", FAULTS, ids=lambda fault: fault.test.split("::")[1])
def test_each_fault_names_a_test_that_exists(fault):
    path, function = fault.test.split("::")
    assert f"\ndef {function}(" in (ROOT / path).read_text(), f"{fault.test} is gone"


def render():
    rows = [
        [f"`{name}`", case.bad_input, f"`{case.words}`", case.exit]
        for name, case in sorted(CASES.items())
    ]
    faults = [[fault.fault, fault.outcome, f"`{fault.test}`"] for fault in FAULTS]
    ranges = [
        [
            f"`{section}.{name}`",
            declared.describe(),
            settings.ACCEPTED_LATER.get(f"{section}.{name}", ""),
        ]
        for section, names in settings.RANGES.items()
        for name, declared in names.items()
    ]
    return (
        "# Bad input: one line and an exit code\n\n"
        "Generated from `tests/test_bad_input.py` (`python -m tests.test_bad_input`), whose "
        "test runs each case and checks its exit code, that the line on stderr reads "
        "`error: <what was wrong>; expected <what>; <how to fix>` and holds the words shown, "
        "and that nothing was left behind. Exit 2: the user's mistake; exit 1: the run "
        "itself failed. `--debug` shows the traceback instead.\n\n"
        + table(["case", "bad input", "error line holds", "exit"], rows)
        + "\n\n"
        "## Faults\n\n"
        "Findings that are not one bad command line, each with the test that feeds it:\n\n"
        + table(["fault", "what happens", "test"], faults)
        + "\n\n"
        "## Every numeric setting's range\n\n"
        "Declared once in `arena_tf/settings.py` and checked when a config is read, before "
        "anything is written; a value outside its range is refused in one line naming the "
        "setting (exit 2). NaN and the infinities are outside every range. Where a range "
        "accepts huge values, the last column says what happens to them. Attention "
        "parameters are checked by each mechanism when the model is built "
        "(`model.attention_params.projected_length` at most the input's length); what does "
        "not fit the machine's memory is the memory guard's (`arena_tf/memory_guard.py`).\n\n"
        + table(["setting", "accepted", "huge values"], ranges)
        + "\n"
    )


def test_the_doc_table_is_generated_from_the_cases():
    assert DOC.read_text() == render(), "run `python -m tests.test_bad_input`"


if __name__ == "__main__":
    DOC.write_text(render())
