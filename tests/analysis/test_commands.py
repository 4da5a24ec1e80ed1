"""`python -m arena_tf.analysis span|attention` on run directories."""

import json
import shutil

import numpy as np
import pytest
import yaml
from PIL import Image

from arena_tf import tasks
from arena_tf.analysis import plots
from arena_tf.analysis.__main__ import main
from arena_tf.analysis.rundir import load_run, make_task, sequences
from arena_tf.analysis.weights import MAX_POSITIONS
from arena_tf.config import ModelConfig, TaskConfig
from tests.analysis.conftest import LAYERS, write_run
from tests.one_line import assert_one_error_line


def png_size(path):
    with Image.open(path) as image:
        return image.size


def test_span_writes_span_json_into_the_run_directory(pathfinder_run, capsys):
    assert main(["span", str(pathfinder_run), "--examples", "3"]) == 0
    result = json.loads((pathfinder_run / "span.json").read_text())
    assert (result["task"], result["model"], result["examples"]) == ("pathfinder", "full", 3)
    assert len(result["per_layer"]) == LAYERS and np.shape(result["per_head"]) == (LAYERS, 2)
    # Attention over 1024 pixels: far from local, and no further than the farthest pixel.
    assert 10 < result["span"] < 1023
    assert result["span"] == pytest.approx(np.mean(result["per_head"]))
    assert result["row_sum_min"] == pytest.approx(1.0, abs=1e-4)
    assert "required attention span" in capsys.readouterr().out


def test_span_of_several_runs_draws_a_bar_chart(pathfinder_run, listops_run, tmp_path, capsys):
    out = tmp_path / "spans.png"
    assert (
        main(["span", str(pathfinder_run), str(listops_run), "--examples", "2", "--out", str(out)])
        == 0
    )
    assert png_size(out) == plots.span_chart_size(2)
    result = json.loads((listops_run / "span.json").read_text())
    assert result["method"] == "identity probe"
    # Local blocks of 16: no query reaches further than 15 positions.
    assert 0 < result["span"] < 15


def test_the_default_chart_goes_under_runs_not_the_working_directory(
    pathfinder_run, listops_run, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main(["span", str(pathfinder_run), str(listops_run), "--examples", "2"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]
    assert png_size(tmp_path / "runs" / "analysis" / "span.png") == plots.span_chart_size(2)


def test_a_bad_count_is_one_line_and_exit_2(pathfinder_run, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["span", str(pathfinder_run), "--examples", "0"])
    assert stop.value.code == 2
    assert_one_error_line(capsys.readouterr().err, "'0' is not a whole number >= 1")


def test_attention_draws_maps_over_the_image(pathfinder_run, capsys):
    assert main(["attention", str(pathfinder_run), "--example", "1"]) == 0
    path = pathfinder_run / "attention_example_1.png"
    assert str(path) in capsys.readouterr().out
    # Panels: the input, one per layer, the rollout.
    assert png_size(path) == (
        (LAYERS + 2) * plots.PANEL_PIXELS,
        plots.PANEL_PIXELS + plots.HEADER_PIXELS,
    )


def test_attention_draws_strips_over_the_tokens_of_a_text_task(listops_run):
    assert main(["attention", str(listops_run), "--example", "0"]) == 0
    tokens, _ = sequences(make_task(load_run(listops_run).config), "validation", 1)
    real = int((tokens[0] != 0).sum())
    expected = plots.text_figure_size(LAYERS + 1, real)
    assert png_size(listops_run / "attention_example_0.png") == expected


def test_an_example_outside_the_split_fails_in_one_line(pathfinder_run, capsys):
    assert main(["attention", str(pathfinder_run), "--example", "999"]) == 2
    assert_one_error_line(capsys.readouterr().err, "--example 999 is outside the validation split")


@pytest.mark.parametrize("command", [["span"], ["attention"]])
def test_a_run_directory_without_a_trained_model_fails_in_one_line(
    command, pathfinder_run, tmp_path, capsys
):
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "config.yaml").write_text((pathfinder_run / "config.yaml").read_text())
    assert main([*command, str(unfinished)]) == 2
    assert_one_error_line(capsys.readouterr().err, "holds no trained model; expected model.keras")


@pytest.mark.parametrize("command", [["span"], ["attention"]])
def test_a_model_beside_another_runs_config_is_refused_before_any_data_work(
    command, pathfinder_run, listops_run, tmp_path, capsys
):
    config = yaml.safe_load((pathfinder_run / "config.yaml").read_text())
    config["task"]["data_dir"] = str(tmp_path / "data")  # pathfinder data that would be generated
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "config.yaml").write_text(yaml.safe_dump(config))
    shutil.copy(listops_run / "model.keras", mixed / "model.keras")
    assert main([*command, str(mixed)]) == 2
    assert_one_error_line(capsys.readouterr().err, "model.keras does not match")
    assert not (tmp_path / "data").exists()
    assert sorted(p.name for p in mixed.iterdir()) == ["config.yaml", "model.keras"]


def test_a_model_longer_than_the_limit_is_refused_before_any_work(tmp_path, capsys):
    model = ModelConfig(
        num_layers=1,
        num_heads=1,
        emb_dim=8,
        qkv_dim=8,
        mlp_dim=8,
        pooling="cls",  # the CLS token makes it one position too long
        **tasks.get("listops", max_len=MAX_POSITIONS).model_fields(),
    )
    run_dir = write_run(tmp_path / "long", TaskConfig(name="listops", max_len=MAX_POSITIONS), model)
    assert main(["span", str(run_dir)]) == 2
    assert_one_error_line(capsys.readouterr().err, f"the limit is {MAX_POSITIONS} positions")
