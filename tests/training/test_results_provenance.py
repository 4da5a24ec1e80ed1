"""results.json says where each row came from, truly: training records its row and writes no docs
(`make docs` does), every commit a row names exists, a run whose whole training time is not known
says "unknown" (never 0), rows trained from a tree with uncommitted changes are named as such, and
the archived suites the rows name are still found by name."""

import json
import subprocess

import pytest
import yaml

from arena_tf.reproduce import report, running
from arena_tf.reproduce.results import RESULTS, read_results
from arena_tf.reproduce.suites import ROOT, SUITES, load_suite, plan, suite_paths
from tests.training.conftest import TINY, loop


def test_training_records_its_row_and_writes_no_docs(listops_dir, tmp_path, capfd):
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "tiny.yaml").write_text(
        yaml.safe_dump(
            {
                "task": "listops",
                "data_dir": str(listops_dir),
                "overrides": [*TINY, *loop(2)],
                "mechanisms": ["linear"],
                "paper": {},
            }
        )
    )
    suite = load_suite("tiny", suites)
    results = tmp_path / "results.json"
    runs = plan(suite, runs_dir=tmp_path / "runs")
    before = {path: path.stat().st_mtime for path in (ROOT / "docs").rglob("*.md")}
    assert running.run_suite(suite, runs, results=results, suites_dir=suites) == 1
    (row,) = json.loads(results.read_text())
    assert row["mechanism"] == "linear" and row["train_seconds"] > 0
    assert "python -m arena_tf.reproduce report" in capfd.readouterr().out
    assert {path: path.stat().st_mtime for path in (ROOT / "docs").rglob("*.md")} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["results.json", "runs", "suites"]


def git(*arguments):
    return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True)


def test_every_commit_a_row_names_exists():
    if git("rev-parse", "--is-shallow-repository").stdout.strip() != "false":
        pytest.skip("a shallow clone (or no git) lacks the history to look in")
    commits = {
        entry["git_commit"].removesuffix("+dirty")
        for row in read_results(RESULTS)
        for entry in (row, *row.get("reruns", ()))
        if entry.get("git_commit")
    }
    missing = [c for c in sorted(commits) if git("cat-file", "-e", f"{c}^{{commit}}").returncode]
    assert not missing, f"rows name commits that are not in the history: {missing}"


def test_an_unknown_training_time_reads_unknown_never_zero():
    row = {"train_seconds": None, "steps": 5000}
    assert report.time_cell(row) == "unknown"
    lower = {**row, "last_session": {"seconds": 2633.7, "steps": 2000}}
    assert report.time_cell(lower).startswith("unknown: over 44 min")
    assert report.time_cell({**row, "train_seconds": 0}) == "unknown"
    assert report.time_cell({**row, "train_seconds": 1800.0}) == "30 min"
    assert all(r["train_seconds"] is None or r["train_seconds"] > 0 for r in read_results(RESULTS))


def test_rows_from_a_tree_with_uncommitted_changes_are_named():
    rows = [
        {"suite": "s", "mechanism": "mega", "seed": 0, "git_commit": "3b061b4f6616+dirty"},
        {"suite": "s", "mechanism": "full", "seed": 1, "git_commit": "7b444301f358"},
    ]
    text = "\n".join(report.dirty_section(rows))
    assert "s mega seed 0 (3b061b4f6616+dirty)" in text and "full" not in text
    assert report.dirty_section(rows[1:]) == []


def test_the_suites_rows_name_are_found_and_the_archive_stays_apart():
    for name in {row["suite"] for row in read_results(RESULTS)}:
        assert load_suite(name).name == name
    front = {path.stem for path in SUITES.glob("*.yaml")}
    assert {"cpu-listops", "cpu-pathfinder", "lra"} <= front
    assert "listops-recipe-4" in suite_paths() and "listops-recipe-4" not in front
