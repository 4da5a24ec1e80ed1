"""tools/lra_size_run.py: the untrained LRA-size ListOps run that tools/serving_gpu.sh serves."""

import importlib.util
import pathlib

from arena_tf.config import load_experiment, read_yaml
from tests.one_line import assert_one_error_line

TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "lra_size_run.py"
SPEC = importlib.util.spec_from_file_location("lra_size_run", TOOL)
lra_size_run = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(lra_size_run)


def demo_run(tmp_path):
    demo = tmp_path / "demo"
    demo.mkdir()
    config = load_experiment("listops", "linformer", preset="tiny")
    (demo / "config.yaml").write_text(config.to_yaml())
    return demo


def test_it_writes_the_lra_listops_model_at_the_length_asked(tmp_path):
    out = tmp_path / "lra"
    assert lra_size_run.main([str(demo_run(tmp_path)), str(out), "--max-len", "64"]) == 0
    model = read_yaml(out / "config.yaml")["model"]
    lra = load_experiment("listops", "linformer").model
    assert (model["num_layers"], model["emb_dim"], model["max_len"]) == (
        lra.num_layers,
        lra.emb_dim,
        64,
    )
    assert (out / "model.keras").is_file()


def test_an_output_place_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "notes").write_text("")
    arguments = [str(demo_run(tmp_path)), str(tmp_path / "notes" / "lra")]
    assert lra_size_run.main(arguments) == 2
    assert_one_error_line(capsys.readouterr().err, "OUT_RUN_DIR")
    assert not (tmp_path / "notes").stat().st_size
