"""Reports: atomic writes, the CSV and Markdown contents, the plots."""

import csv
import json
import pathlib
import re
import sys

import pytest

from arena_tf.serving import plots, report

ROWS = [
    {
        "model": "a",
        "runtime": "tf",
        "precision": "fp32",
        "scenario": "fixed_batch",
        "status": "ok",
        "accuracy": 0.5,
        "throughput": 100.0,
        "request_latency_p50_ms": 1.0,
        "request_latency_p99_ms": 2.0,
        "peak_rss_bytes": 200 << 20,
        "energy_wh": 0.01,
        "parameters": 1000,
        "note": "",
        "server_trials": [{"rate": 1.0, "passed": True}],
    },
    {
        "model": "a",
        "runtime": "onnxruntime",
        "precision": "fp16",
        "scenario": "fixed_batch",
        "status": "unsupported",
        "note": "model.fp16.onnx is missing | export it",
    },
]


def test_reports_hold_every_row(tmp_path):
    report.write_all(ROWS, tmp_path)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["runtime"] for line in lines] == ["tf", "onnxruntime"]
    with open(tmp_path / "results.csv") as f:
        table = list(csv.DictReader(f))
    assert table[0]["accuracy"] == "0.5" and table[1]["accuracy"] == ""
    assert json.loads(table[0]["server_trials"]) == [{"rate": 1.0, "passed": True}]
    markdown = (tmp_path / "results.md").read_text().splitlines()
    assert "| a | tf | fp32 | fixed_batch | ok | 0.5000 | 100.0 | 1.00 / 2.00 |" in markdown[2]
    assert "| 200 |" in markdown[2]  # peak RSS in MiB
    cells = [re.split(r"(?<!\\)\|", line) for line in (markdown[0], markdown[3])]
    assert len(cells[0]) == len(cells[1])  # the note's "|" is escaped, not a new column


def test_a_failed_write_leaves_the_previous_report_whole(tmp_path, monkeypatch):
    report.write_all(ROWS[:1], tmp_path)
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}

    def write_half_then_fail(self, text, *args, **kwargs):
        with open(self, "w") as f:
            f.write(text[: len(text) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(pathlib.Path, "write_text", write_half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        report.write_all(ROWS, tmp_path)
    monkeypatch.undo()
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == before  # no temporaries left


def test_radar_and_bubble_charts_are_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [dict(ROWS[0], scenario=s) for s in ("fixed_batch", "single_stream", "offline")]
    rows += [
        dict(r, runtime="onnxruntime", throughput=300.0, peak_rss_bytes=50 << 20) for r in rows
    ]
    paths, notes = plots.write_all(rows, tmp_path)
    assert sorted(p.name for p in paths) == ["bubbles.png", "radar_a.png"] and not notes
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in paths)


def test_without_matplotlib_there_are_no_plots_and_a_note_says_how_to_get_them(
    tmp_path, monkeypatch
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert plots.write_all(ROWS, tmp_path) == (
        [],
        ["no plots: matplotlib is not installed (pip install matplotlib)"],
    )


def test_radar_scores_put_the_best_value_on_the_outer_ring():
    assert plots.scores([100.0, 50.0, None], True, False) == [1.0, 0.5, None]
    assert plots.scores([10.0, 20.0], False, False) == [1.0, 0.5]
    assert plots.scores([0.0, 0.5], True, False) == [0.0, 1.0]  # zero accuracy is a value


def test_without_accuracy_there_is_no_bubble_chart_and_a_note_says_why(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [dict(ROWS[0], accuracy=None)]
    paths, notes = plots.write_all(rows, tmp_path)
    assert [p.name for p in paths] == ["radar_a.png"]
    assert "accuracy is that of a fixed_batch row" in notes[0]


def ok_row(model, scenario, runtime, precision, throughput):
    return {
        "model": model,
        "scenario": scenario,
        "runtime": runtime,
        "precision": precision,
        "status": "ok",
        "throughput": throughput,
    }


def test_throughput_ratios_compare_runtimes_and_precisions_per_model_and_scenario():
    rows = [
        ok_row("a", "fixed_batch", "tf", "fp32", 100.0),
        ok_row("a", "fixed_batch", "onnxruntime", "fp32", 150.0),
        ok_row("a", "fixed_batch", "tf", "bf16", 50.0),
        ok_row("a", "fixed_batch", "openvino", "fp32", 300.0),
        ok_row("a", "fixed_batch", "xla", "fp32", 75.0),
        ok_row("b", "fixed_batch", "tf", "fp32", 10.0),
        ok_row("b", "fixed_batch", "onnxruntime", "fp32", 60.0),
        {**ok_row("b", "fixed_batch", "tf", "bf16", 99.0), "status": "failed"},
        {**ok_row("a", "fixed_batch", "onnxruntime", "fp16", 999.0), "status": "invalid"},
        ok_row("c", "offline", "onnxruntime", "fp16", 5.0),
    ]
    ratios = report.throughput_ratios(rows)
    assert ratios == {
        ("a", "fixed_batch"): [1.5, None, 0.5, None, 2.0, 3.0, 0.5, None, None],
        ("b", "fixed_batch"): [6.0, None, None, None, None, None, None, None, None],
    }
    text = report.markdown(rows)
    assert "| a | fixed_batch | 1.50x | - | 0.50x | - | 2.00x | 3.00x | 0.50x | - | - |" in text
    # the geometric mean of 1.5 and 6; a ratio with one model only is that model's
    assert (
        "| all models | fixed_batch | 3.00x | - | 0.50x | - | 2.00x | 3.00x | 0.50x | - | - |"
        in text
    )


def test_one_model_has_no_mean_rows():
    rows = [
        ok_row("a", "offline", "tf", "fp32", 100.0),
        ok_row("a", "offline", "onnxruntime", "fp32", 150.0),
    ]
    text = report.markdown(rows)
    assert "| a | offline | 1.50x |" in text and "all models" not in text


def test_the_energy_note_names_an_estimate_s_source_once():
    row = {
        "energy_source": "codecarbon (estimated)",
        "energy_note": "estimated by codecarbon, no sensor readable: RAPL: none",
    }
    assert report.energy_note(row) == (
        "energy: estimated by codecarbon, no sensor readable: RAPL: none"
    )
    assert (
        report.energy_note({"energy_source": "rapl", "energy_note": "package 0"})
        == "energy: rapl (package 0)"
    )
    assert report.energy_note({"energy_source": None}) == "energy: none"


def test_no_ratio_table_without_a_pair():
    assert "ratios" not in report.markdown(ROWS)


def run_rows():
    """Two runtimes' fp32 rows of one model, each naming the machine it ran on."""
    machine = {"cpu": "Test CPU 9000", "cores": 2, "device": "cpu"}
    rows = []
    for runtime, p50, load in (("onnxruntime", 4.0, 0.5), ("xla", 1.0, 1.5)):
        for scenario in ("fixed_batch", "single_stream"):
            rows.append(
                dict(
                    ROWS[0],
                    runtime=runtime,
                    scenario=scenario,
                    load_average=load,
                    request_latency_p50_ms=p50,
                    model_latency_p50_ms=p50 / 2,
                    **machine,
                )
            )
    return rows


def test_the_report_is_rewritten_from_results_jsonl_alone(tmp_path):
    """`python -m serving.report DIR` gives the results.md the bench wrote, notes included: what
    the notes say comes from the rows, not from the bench's process."""
    rows = run_rows()
    report.write_all(rows, tmp_path, report.notes(rows) + plots.notes(rows))
    written = (tmp_path / "results.md").read_text()
    assert "- machine: Test CPU 9000, 2 cores; 1-minute load average 0.50 to 1.50" in written
    assert "- device: cpu;" in written
    (tmp_path / "results.md").unlink()
    assert report.main([str(tmp_path)]) == 0
    assert (tmp_path / "results.md").read_text() == written
    assert report.regenerated(tmp_path)[tmp_path / "results.md"] == written


def test_regenerating_writes_each_report_once_and_leaves_the_rows_alone(tmp_path, monkeypatch):
    """What `make docs` writes and what its --check compares: results.md and results.csv."""
    rows = run_rows()
    report.write_all(rows, tmp_path)
    source = (tmp_path / "results.jsonl").read_text()
    monkeypatch.setattr(report.plots, "write_all", lambda rows, out_dir: ([], []))
    expected = {tmp_path / "results.md", tmp_path / "results.csv"}
    assert set(report.regenerated(tmp_path)) == expected
    written = report.regenerate(tmp_path)
    assert sorted(written) == sorted(expected)  # each once, results.jsonl not among them
    assert (tmp_path / "results.jsonl").read_text() == source
    assert (tmp_path / "results.csv").read_text() == report.csv_text(rows)


def test_the_summary_names_the_p50_ratio_and_the_machine():
    text = report.summary(run_rows())
    assert "| a | xla | fp32 | 0.5000 | 100.0 | - | 1.00 / 0.50 | - | 200-200 |" in text
    assert (
        "single_stream p50 of xla over onnxruntime (FP32): 0.25x end to end and 0.25x "
        "in-model" in text
    )
    assert "machine: Test CPU 9000, 2 cores" in text


def test_a_machine_without_load_averages_is_named_without_them():
    rows = [{k: v for k, v in row.items() if k != "load_average"} for row in run_rows()]
    assert report.machine_notes(rows) == ["machine: Test CPU 9000, 2 cores (4 rows)"]
    assert "machine: Test CPU 9000, 2 cores (4 rows)" in report.summary(rows)


def test_no_p50_line_without_either_latency():
    rows = [{k: v for k, v in row.items() if "latency" not in k} for row in run_rows()]
    assert report.p50_ratios(rows) == []
    assert "(FP32):" not in report.summary(rows)


def test_the_summary_says_whether_fp32_accuracies_agree_and_what_did_not_run():
    rows = run_rows()
    assert report.accuracy_notes(rows) == [
        "a: fixed_batch accuracy in FP32: 0.5000 in every runtime (onnxruntime, xla)"
    ]
    rows[-2]["accuracy"] = 0.25  # xla's fixed_batch row
    assert report.accuracy_notes(rows) == [
        "a: fixed_batch accuracy in FP32: onnxruntime 0.5000, xla 0.2500"
    ]
    assert report.not_run_notes(rows) == []
    text = report.summary([*rows, ROWS[1]])
    assert (
        "- no ok row (the note column of results.md says why): a onnxruntime fp16 "
        "(unsupported)" in text
    )


def test_the_report_command_refuses_a_directory_without_results(tmp_path, capsys):
    assert report.main([str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "results.jsonl does not exist" in error[0]


def test_the_report_command_says_how_to_mend_a_line_that_is_not_a_row(tmp_path, capsys):
    """The advice fits `python -m serving.report`, which has no --overwrite or --out."""
    (tmp_path / "results.jsonl").write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    assert report.main([str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error: ")
    assert "results.jsonl:2 is not a row of serving.bench" in error[0]
    assert error[0].endswith("; fix or delete that line of results.jsonl")
    assert "--overwrite" not in error[0]
