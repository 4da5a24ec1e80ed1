"""`analysis listops-baselines`: rules that read a ListOps tree only so far (the root operator,
the root over its children, ...), fitted on the train split and scored on the test split, and the
reproduction report drawing them beside ListOps rows."""

import json

import pytest

from arena_tf.analysis.__main__ import main
from arena_tf.generators import listops as generator
from arena_tf.reproduce import report
from arena_tf.reproduce.suites import load_suite
from arena_tf.tasks import listops
from tests.one_line import assert_one_error_line

SPEC = generator.ListOpsSpec(
    train=300, validation=20, test=200, min_length=20, max_length=200, seed=5
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("listops")
    generator.generate(out, SPEC, processes=1)
    return out


def test_reading_to_a_level_replaces_the_operators_there_by_their_usual_value():
    tree = generator.parse("( ( [SM ( [MIN 3 ) 4 ] ) 9 ] )")
    assert tree == ("[SM", [("[MIN", [3, 4]), 9])
    usual = {"[SM": 5, "[MIN": 0, "[MAX": 9, "[MED": 4}
    assert generator.read_to_level(tree, 0, usual) == 5  # the root operator alone
    assert generator.read_to_level(tree, 1, usual) == 9  # SM(usual MIN = 0, 9)
    assert generator.read_to_level(tree, 2, usual) == 2  # SM(MIN(3, 4), 9): the value
    assert generator.evaluate("[SM [MIN 3 4 ] 9 ]") == 2


def test_usual_values_are_each_operators_most_common_value_at_that_level():
    trees = [
        generator.parse(text)
        for text in ("[MAX 1 [MIN 3 4 ] ]", "[MAX 2 [MIN 3 5 ] ]", "[MIN 7 [MIN 6 5 ] ]")
    ]
    assert generator.usual_values(trees, 0)["[MAX"] == 3  # MAX values 3 and 3
    assert generator.usual_values(trees, 0)["[MIN"] == 5
    assert generator.usual_values(trees, 1)["[MIN"] == 3  # 3, 3, 5
    assert generator.usual_values(trees, 1)["[SM"] == 3  # never seen: the most common of all


def test_deep_enough_rules_score_every_tree_and_the_majority_is_counted(data_dir):
    result = listops.rule_baselines(
        listops.ListOps(data_dir=str(data_dir), generate=False), levels=(0, 1, 12), fit_trees=100
    )
    assert (result.fitted, result.scored) == (100, 200)
    assert result.levels[12] == 1.0  # deeper than any tree: the value itself
    labels = [
        int(line.rsplit("\t", 1)[1])
        for line in (data_dir / "basic_test.tsv").read_text().splitlines()[1:]
    ]
    assert result.majority[1] == labels.count(result.majority[0]) / len(labels)
    assert 0 < result.levels[0] < 1


def test_the_command_prints_each_rule_and_writes_json(data_dir, tmp_path, capsys):
    out = tmp_path / "rules.json"
    assert (
        main(
            [
                "listops-baselines",
                str(data_dir),
                "--levels",
                "0,1",
                "--fit-trees",
                "100",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    written = json.loads(out.read_text())
    assert f"level 0, root operator: {written['levels']['0']:.1%}" in printed
    assert f"level 1, root over its children: {written['levels']['1']:.1%}" in printed
    assert written["scored"] == 200


def test_a_folder_without_listops_files_is_one_line(tmp_path, capsys):
    assert main(["listops-baselines", str(tmp_path)]) == 2
    assert_one_error_line(capsys.readouterr().err, "listops")


def test_the_report_draws_the_rules_beside_suites_of_the_default_data(tmp_path):
    recorded = tmp_path / "rules.json"
    recorded.write_text(
        json.dumps(
            {
                "levels": {"0": 0.373, "1": 0.583},
                "names": {"0": "root operator", "1": "root over its children"},
            }
        )
    )
    rules = report.listops_rules(load_suite("cpu-listops-ssm"), "listops", recorded)
    assert rules == {
        "root operator rule (37.3%)": pytest.approx(37.3),
        "root over its children rule (58.3%)": pytest.approx(58.3),
    }
    assert report.listops_rules(load_suite("listops-short"), "listops", recorded) == {}
    assert report.listops_rules(load_suite("cpu-pathfinder"), "pathfinder", recorded) == {}
    assert report.listops_rules(load_suite("cpu-listops"), "listops", tmp_path / "none") == {}
