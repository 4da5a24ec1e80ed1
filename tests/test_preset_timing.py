"""The tiny presets' timing (arena_tf/preset_timing.py): merging re-measured rows, and the table
of docs/results/presets.json (tests/test_docs.py checks that the training guide shows it)."""

import pytest

from arena_tf import preset_timing as presets
from tests.one_line import assert_one_error_line


def row(task, busy, accuracy=0.6):
    return {
        "task": task,
        "model": "linformer",
        "busy": busy,
        "date": "2026-11-24",
        "load_before": 1.0,
        "status": "measured",
        "seconds": 75.0,
        "steps": 600,
        "test_accuracy": accuracy,
        "chance": 0.5,
        "test_examples": 400,
        "verdict": presets.verdict(accuracy, 0.5, 400),
    }


def test_measured_rows_replace_rows_of_the_same_task_model_and_load_in_task_order():
    old = {"rows": [row("pathfinder", 0, 0.5), row("listops", 0), row("pathfinder", 1)]}
    merged = presets.merge(old, [row("pathfinder", 0, 0.7)])
    assert [(r["task"], r["busy"]) for r in merged["rows"]] == [
        ("listops", 0),
        ("pathfinder", 0),
        ("pathfinder", 1),
    ]
    assert merged["rows"][1]["test_accuracy"] == 0.7


def test_times_read_in_whole_seconds():
    assert presets.minutes(59.6) == "1 min 00 s" and presets.minutes(754.2) == "12 min 34 s"


def test_table_names_time_accuracy_chance_and_verdict():
    lines = presets.markdown_table(
        {
            "rows": [
                row("listops", 1),
                {**row("text", 0), "status": "not measured", "note": "error: no data"},
            ]
        }
    ).splitlines()
    assert lines[2] == (
        "| `listops` | `linformer` | beside 1 busy process, load 1.0 before | "
        "1 min 15 s | 600 | "
        "60.0% (chance 50.0%, 400 examples): learns | 2026-11-24 |"
    )
    assert "not measured: error: no data" in lines[3]


def test_unknown_tasks_are_one_line_and_exit_2(capsys):
    assert presets.main(["measure", "--tasks", "listops,nope"]) == 2
    assert_one_error_line(capsys.readouterr().err, "unknown task 'nope'")


def test_a_results_file_cut_short_is_refused_before_out_is_made(tmp_path, capsys):
    (tmp_path / "presets.json").write_text('{"rows": [')
    out = tmp_path / "runs" / "presets"
    assert (
        presets.main(
            [
                "measure",
                "--tasks",
                "listops",
                "--out",
                str(out),
                "--results",
                str(tmp_path / "presets.json"),
            ]
        )
        == 2
    )
    assert_one_error_line(capsys.readouterr().err, "cannot be read as JSON")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("busy", [0, 2])
def test_busy_processes_run_until_killed(busy):
    hogs = presets.busy_processes(busy)
    assert all(hog.poll() is None for hog in hogs)
    for hog in hogs:
        hog.kill()
        hog.wait()
    assert len(hogs) == busy
