"""The report generator: markdown tables, target verdicts and PNG plots from small results."""

import json
import math

import pytest

from arena_tf.benchmark import __main__ as cli
from arena_tf.benchmark import paper, report, targets
from tests.one_line import assert_one_error_line

MACHINE = {
    "cpu": "Test CPU",
    "cores": 2,
    "memory_gb": 8.0,
    "platform": "Linux",
    "versions": {"tensorflow": "2.20.0"},
}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# The optional results files a test does not give, so the repo's own are not read.
NO_EXTRAS = ["--pairs", "no-pairs.json", "--exact", "no-exact.json", "--gpu"]


def stats(ms, peak_mb, fraction=None):
    record = {
        "median_ms": ms,
        "p25_ms": ms * 0.95,
        "p75_ms": ms * 1.05,
        "min_ms": ms * 0.9,
        "max_ms": ms * 1.1,
        "samples_ms": [ms],
        "peak_mb": peak_mb,
    }
    if fraction is not None:
        record.update(gflops=100 * fraction, matmul_fraction=fraction)
    return record


def layer_row(label, kind, length, train_ms, peak_mb, fraction=0.4):
    return {
        "label": label,
        "kind": kind,
        "name": label,
        "params": {},
        "length": length,
        "shape": {"batch": 1, "length": length, "heads": 4, "head_dim": 64},
        "formula_flops": 1e9,
        "formula_train_flops": 3e9,
        "estimated_gb": 0.5,
        "skipped": None,
        "load": 1.0,
        "profiled": {"forward_matmul_flops": 1e9},
        "forward": stats(train_ms / 3, peak_mb / 2, fraction),
        "train": stats(train_ms, peak_mb, fraction),
    }


def train_row(name, jit, steps_per_second, peak_mb, flops):
    return {
        "name": name,
        "params": {},
        "length": 4096,
        "jit": jit,
        "batch": 4,
        "requested_batch": 4,
        "estimated_gb": 1.0,
        "skipped": None,
        "train_flops": flops,
        "step": stats(1e3 / steps_per_second, peak_mb),
        "steps_per_second": steps_per_second,
        "peak_mb": peak_mb,
        "first_step_s": 5.0,
        "load": 1.0,
    }


def results(kind, rows, **extra):
    return {
        "benchmark": kind,
        "machine": MACHINE,
        "options": {"batch": 4, "warmup": 2, "steps": 3},
        "started": "2026-01-01 00:00:00",
        "finished": "2026-01-01 01:00:00",
        "load_start": 0.5,
        "rows": rows,
        **extra,
    }


@pytest.fixture
def result_files(tmp_path):
    layer_rows = [
        layer_row("full", "layer", 4096, train_ms=120, peak_mb=3000, fraction=0.55),
        layer_row("keras_mha", "peer", 4096, train_ms=100, peak_mb=3000),
        layer_row("performer", "layer", 4096, train_ms=100, peak_mb=200, fraction=0.2),
        layer_row("kernel_exp", "peer", 4096, train_ms=200, peak_mb=300),
        {
            **layer_row("full", "layer", 16384, 1, 1),
            "skipped": "estimated 25.8 GB exceeds the 16 GB memory cap",
            "estimated_gb": 25.8,
            "forward": None,
            "train": None,
        },
    ]
    for row in layer_rows[-1:]:
        del row["forward"], row["train"]
    layers_json = tmp_path / "layers.json"
    layers_json.write_text(
        json.dumps(
            results(
                "layers",
                layer_rows,
                matmul=[{"gflops": 100.0, "size": 2048}],
                agreement=[
                    {
                        "peer": "keras_mha",
                        "title": "MHA",
                        "counterpart": "full",
                        "counterpart_params": {},
                        "length": 512,
                        "compared": True,
                        "relative_difference": 0.0,
                        "input_scale": 1.0,
                        "agrees": True,
                        "note": "",
                    }
                ],
            )
        )
    )
    train_json = tmp_path / "train.json"
    train_json.write_text(
        json.dumps(
            results(
                "train",
                [
                    train_row("full", False, 0.5, 8000, 6e12),
                    train_row("full", True, 0.6, 7000, 6e12),
                    train_row("linear", False, 2.0, 900, 1e12),
                    train_row("linear", True, 2.2, 850, 1e12),
                    {**train_row("linear", False, 1.6, 500, 1e12), "remat": True},
                ],
                model={
                    "num_layers": 4,
                    "num_heads": 4,
                    "emb_dim": 256,
                    "qkv_dim": 256,
                    "mlp_dim": 1024,
                    "vocab_size": 257,
                    "num_classes": 2,
                },
            )
        )
    )
    runs = tmp_path / "runs" / "text-linear"
    runs.mkdir(parents=True)
    (runs / "metrics.json").write_text(json.dumps({"test_accuracy": 0.70}))
    return tmp_path


def test_report_writes_markdown_with_verdicts_and_pngs(result_files):
    output = result_files / "docs" / "efficiency.md"
    cli.main(
        [
            "report",
            *NO_EXTRAS,
            "--layers",
            str(result_files / "layers.json"),
            "--train",
            str(result_files / "train.json"),
            "--runs",
            str(result_files / "runs"),
            "--mixers",
            str(result_files / "no-mixers.json"),
            "--notes",
            str(result_files / "no-notes.md"),
            "--output",
            str(output),
        ]
    )
    text = output.read_text()
    lines = text.splitlines()
    performer = next(line for line in lines if line.startswith("| performer >= 1.3x"))
    assert "| met |" in performer and "2" in performer  # 200 ms / 100 ms
    full = next(line for line in lines if line.startswith("| full >= 1x as fast as keras_mha"))
    assert "**missed**" in full
    linear_memory = next(
        line for line in lines if line.startswith("| linear with train.remat: training memory")
    )
    assert "| met |" in linear_memory  # 500 MB (remat) vs 8000 MB = 1/16
    remat = next(line for line in lines if line.startswith("| linear | 4 / 4 |"))
    assert "1.25x" in remat and "900 / 500" in remat  # 2.0 / 1.6 steps/s; peaks stored / remat
    performer_memory = next(
        line for line in lines if line.startswith("| performer with train.remat: training memory")
    )
    assert "not measured" in performer_memory
    assert "skipped (26 GB est.)" in text
    assert "full (exact, blockwise)" not in text  # no exact results: no such target
    assert "Test CPU, 2 cores" in text and "### The paper's Table 2" in text
    for name in ("efficiency_time.png", "efficiency_memory.png", "efficiency_lra_figure3.png"):
        assert (output.parent / name).read_bytes().startswith(PNG_MAGIC)
        assert f"]({name})" in text


def test_figure3_uses_our_accuracy_where_a_run_exists(result_files):
    rows = json.loads((result_files / "train.json").read_text())["rows"]
    points = {p["name"]: p for p in report.figure3_points(rows, result_files / "runs")}
    assert points["full"]["source"] == "paper"
    assert points["full"]["accuracy"] == pytest.approx(paper.average_accuracy("full"))
    assert points["linear"]["source"] == "ours 1/5, paper rest"
    published = list(paper.ACCURACY["linear"])
    published[paper.TASKS.index("text")] = 70.0
    assert points["linear"]["accuracy"] == pytest.approx(sum(published) / 5)


def test_report_without_results_says_what_to_run(tmp_path, capsys):
    assert (
        cli.main(
            [
                "report",
                *NO_EXTRAS,
                "--layers",
                str(tmp_path / "a.json"),
                "--train",
                str(tmp_path / "b.json"),
                "--output",
                str(tmp_path / "out.md"),
            ]
        )
        == 2
    )
    assert_one_error_line(capsys.readouterr().err, "run `python -m arena_tf.benchmark layers`")
    assert not (tmp_path / "out.md").exists()


def test_relative_speed_and_memory_are_per_example_when_batches_differ():
    full = {**train_row("full", False, 0.5, 8000, 6e12), "batch": 2}
    linear = {**train_row("linear", False, 0.25, 4000, 1e12), "batch": 16}
    # full: 1 example/s and 4000 MB per example; linear: 4 examples/s and 250 MB per example.
    assert report.relative(targets.examples_per_second)(linear, full) == pytest.approx(4.0)
    assert report.relative(targets.per_example_memory)(linear, full) == pytest.approx(0.0625)
    assert math.isnan(report.relative(targets.examples_per_second)(linear, None))


def test_mixers_get_their_section_and_the_growth_target(result_files):
    mixers = result_files / "mixers.json"
    mixers.write_text(
        json.dumps(
            results(
                "layers",
                [
                    layer_row("full", "layer", 4096, train_ms=120, peak_mb=3000),
                    layer_row("s4d", "layer", 4096, train_ms=50, peak_mb=100),
                    layer_row("s4d", "layer", 16384, train_ms=200, peak_mb=400),  # x4: met
                    layer_row("mega", "layer", 4096, train_ms=50, peak_mb=100),
                    layer_row("mega", "layer", 16384, train_ms=300, peak_mb=400),  # x6: missed
                ],
                matmul=[{"gflops": 100.0, "size": 2048}],
            )
        )
    )
    output = result_files / "efficiency.md"
    cli.main(
        [
            "report",
            *NO_EXTRAS,
            "--layers",
            str(result_files / "none.json"),
            "--train",
            str(result_files / "train.json"),
            "--mixers",
            str(mixers),
            str(result_files / "absent.json"),
            "--runs",
            str(result_files / "runs"),
            "--output",
            str(output),
        ]
    )
    lines = output.read_text().splitlines()
    assert "## State-space mixers, one layer" in lines
    s4d = next(line for line in lines if line.startswith("| s4d: time and memory at 16384"))
    mega = next(line for line in lines if line.startswith("| mega: time and memory at 16384"))
    s5 = next(line for line in lines if line.startswith("| s5: time and memory at 16384"))
    assert "| met |" in s4d and "**missed**" in mega and "not measured" in s5
    assert (result_files / "efficiency_mixers_time.png").read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize("peak_mb, verdict", [(3200, "| met |"), (5000, "**missed**")])
def test_exact_attention_gets_its_section_and_the_4_gb_target(result_files, peak_mb, verdict):
    exact = result_files / "exact.json"
    exact.write_text(
        json.dumps(
            results(
                "layers",
                [
                    layer_row("full", "layer", 4096, train_ms=200, peak_mb=1100),
                    layer_row("full", "layer", 16384, train_ms=9000, peak_mb=peak_mb),
                ],
                matmul=[{"gflops": 100.0, "size": 2048}],
            )
        )
    )
    output = result_files / "efficiency.md"
    cli.main(
        [
            "report",
            "--pairs",
            "no-pairs.json",
            "--exact",
            str(exact),
            "--gpu",
            "--layers",
            str(result_files / "none.json"),
            "--train",
            str(result_files / "train.json"),
            "--mixers",
            "--runs",
            str(result_files / "runs"),
            "--output",
            str(output),
        ]
    )
    lines = output.read_text().splitlines()
    assert "## Exact attention without the L x L matrix" in lines
    target = next(line for line in lines if line.startswith("| full (exact, blockwise)"))
    assert verdict in target and f"{peak_mb} MB above the baseline, 9.0 s per call" in target


def jax_layer_file(path, platform, kind):
    """A `layers --backend jax` results file of `full` and the jax_dpa peer on that device."""

    def jax_row(label, row_kind, length, train_ms, peak_mb):
        row = layer_row(label, row_kind, length, train_ms, peak_mb)
        for stage in ("forward", "train"):
            row[stage].update(peak_source="xla_memory_analysis", compile_s=0.5)
        return row

    device = {
        "platform": platform,
        "kind": kind,
        "count": 1,
        "attention_implementation": "xla",
        "attention_note": f"XLA implementation on {kind}",
    }
    path.write_text(
        json.dumps(
            results(
                "layers",
                [
                    jax_row("full", "layer", 4096, 120, 3000),
                    jax_row("jax_dpa[implementation=xla]", "peer", 4096, 100, 3000),
                ],
                backend={"name": "jax", **device},
                matmul=[{"gflops": 100.0, "size": 2048}],
                agreement=[],
            )
        )
    )
    return path


def test_jax_layer_results_are_labelled_as_jax(tmp_path):
    """A `layers --backend jax` file is never shown as TensorFlow numbers: its headings name the
    backend and device, its text the calls and the memory figure it has."""
    layers_json = jax_layer_file(tmp_path / "layers-jax.json", "cpu", "cpu")
    output = tmp_path / "efficiency.md"
    cli.main(
        [
            "report",
            *NO_EXTRAS,
            "--layers",
            str(layers_json),
            "--train",
            str(tmp_path / "none.json"),
            "--mixers",
            "--notes",
            str(tmp_path / "none.md"),
            "--output",
            str(output),
        ]
    )
    text = output.read_text()
    assert "## One attention layer (JAX on cpu)" in text
    assert "Judged on the layer results (JAX on cpu): not TensorFlow numbers." in text
    assert "### Peak memory, forward + backward (MB: XLA's memory analysis" in text
    assert "`jax.jit`" in text and "jnp.matmul" in text and "`tf.function`" not in text
    assert "- Backend: Keras on JAX, device cpu" in text and "(MB above baseline)" not in text


def test_tensorflow_results_keep_their_headings(result_files):
    output = result_files / "efficiency.md"
    cli.main(
        [
            "report",
            *NO_EXTRAS,
            "--layers",
            str(result_files / "layers.json"),
            "--train",
            str(result_files / "none.json"),
            "--mixers",
            "--notes",
            str(result_files / "none.md"),
            "--output",
            str(output),
        ]
    )
    text = output.read_text()
    assert "## One attention layer\n" in text and "(JAX" not in text
    assert "### Peak memory, forward + backward (MB above baseline)" in text
    assert "float32, `tf.function`, no XLA." in text and "tf.matmul of square" in text


def test_gpu_results_get_their_own_section_and_are_not_judged(result_files):
    """A GPU machine's layer results (--gpu) appear under their device, after this CPU's, and the
    targets stay judged on the CPU's results."""
    gpu = jax_layer_file(result_files / "gpu.json", "gpu", "NVIDIA H200")
    output = result_files / "efficiency.md"
    arguments = [
        "report",
        *NO_EXTRAS,
        "--layers",
        str(result_files / "layers.json"),
        "--train",
        str(result_files / "none.json"),
        "--mixers",
        "--notes",
        str(result_files / "none.md"),
        "--output",
        str(output),
    ]
    cli.main(arguments)
    without = output.read_text()
    cli.main([*arguments, "--gpu", str(gpu)])
    text = output.read_text()
    assert "## On a GPU machine" not in without and "## On a GPU machine" in text
    assert "### Batch 1, 4 heads of 64 (JAX on NVIDIA H200)" in text
    targets_of = lambda doc: doc.split("## Targets")[1].split("\n## ")[0]  # noqa: E731
    assert targets_of(text) == targets_of(without)
