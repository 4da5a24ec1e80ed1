"""StableHLO artifacts (export/to_stablehlo.py): exported in a KERAS_BACKEND=jax process from runs
written under another backend (this process's: TensorFlow in `make test`) and under JAX, run by
XLA as the Keras model runs, in the precision they name, with JAX alone.

Two exports in child processes (module-scoped): the script over a one-input linformer run written
here, all three precisions; and a two-tower linear run written and exported (FP32) under JAX.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest

pytest.importorskip("jax")

from arena_tf.export import stablehlo_model  # noqa: E402
from arena_tf.export.metadata import read_metadata  # noqa: E402
from arena_tf.export.runners import artifact_predictor  # noqa: E402
from tests.export.conftest import (  # noqa: E402
    LENGTH,
    assert_within_rounding,
    keras_logits,
    tiny_config,
    token_batch,
    write_run_dir,
)

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = [pytest.mark.xdist_group("test_stablehlo"), pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]
JAX = {**os.environ, "KERAS_BACKEND": "jax", "TF_CPP_MIN_LOG_LEVEL": "3"}
WRITE_AND_EXPORT_UNDER_JAX = """
import sys, keras
from tests.export.conftest import write_run_dir
from arena_tf.export.to_stablehlo import main

keras.utils.set_random_seed(0)
write_run_dir(sys.argv[1], "linear", two_tower=True)
sys.exit(main([sys.argv[1], "--precision", "fp32", "--examples", "16"]))
"""


def child(*args, env=JAX, cwd=ROOT):
    return subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(one-input run dir, its Keras model, the script's result; two-tower run dir written
    under JAX)."""
    root = tmp_path_factory.mktemp("stablehlo")
    keras.utils.set_random_seed(0)
    run_dir, model = write_run_dir(root / "linformer", "linformer")
    script = child("export/to_stablehlo.py", run_dir, "--examples", "32")
    two_tower = child("-c", WRITE_AND_EXPORT_UNDER_JAX, root / "two-tower")
    assert two_tower.returncode == 0, two_tower.stderr
    return run_dir, model, script, root / "two-tower"


def test_the_script_writes_three_artifacts_each_passing_its_parity_check(exported):
    run_dir, _, script, _ = exported
    assert script.returncode == 0, script.stderr
    lines = script.stdout.splitlines()
    for name, precision in (
        ("stablehlo", "fp32"),
        ("stablehlo_bf16", "bf16"),
        ("stablehlo_fp16", "fp16"),
    ):
        assert any(line.startswith(f"{run_dir / name}: parity passed") for line in lines)
        report = json.loads((run_dir / f"{name}.parity.json").read_text())
        assert report["passed"] and report["runtime"] == "xla" and report["precision"] == precision
        assert report["platforms"] == ["cpu", "cuda"]
        assert {p.name for p in (run_dir / name).iterdir()} == {
            "model.stablehlo",
            "weights.npz",
            "arena_tf.json",
        }
    fp32 = json.loads((run_dir / "stablehlo.parity.json").read_text())
    assert fp32["comparisons"]["keras_fp32"]["max_abs_diff"] <= 1e-4
    assert [c["passed"] for c in fp32["checks"] if c["name"].startswith("length 32 ids")] == [True]
    assert not list(run_dir.glob(".*"))  # no temporary directories left behind


def test_fp32_matches_keras_on_fresh_and_shorter_inputs(exported):
    run_dir, model, _, _ = exported
    predict = artifact_predictor(run_dir / "stablehlo")
    arrays = token_batch(model.get_layer("encoder").config, batch=3, seed=7)
    np.testing.assert_allclose(predict(arrays), keras_logits(model, arrays), atol=1e-4)
    short = [a[:, : LENGTH // 2] for a in arrays]
    padded = [np.pad(a, [(0, 0), (0, LENGTH // 2)]) for a in short]
    np.testing.assert_allclose(predict(short), keras_logits(model, padded), atol=1e-4)


@pytest.mark.parametrize("name", [stablehlo_model.WEIGHTS_FILE, stablehlo_model.MODEL_FILE])
def test_a_damaged_artifact_file_is_named_with_the_re_export(exported, tmp_path, name):
    run_dir = exported[0]
    artifact = tmp_path / "stablehlo"
    shutil.copytree(run_dir / "stablehlo", artifact)
    data = (artifact / name).read_bytes()
    (artifact / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError) as refused:
        stablehlo_model.load(artifact, "fp32", warm_batch=0)
    assert str(refused.value).startswith(f"{artifact / name} cannot be read (")
    assert str(refused.value).endswith("re-export it with export/to_stablehlo.py")


def test_a_two_tower_run_written_under_jax_exports_and_matches_its_keras_model(exported):
    two_tower = exported[3]
    model = keras.saving.load_model(two_tower / "model.keras", compile=False)
    arrays = token_batch(model.get_layer("encoder").config, batch=3, seed=5)
    logits = artifact_predictor(two_tower / "stablehlo")(arrays)
    np.testing.assert_allclose(logits, keras_logits(model, arrays), atol=1e-4)
    metadata = read_metadata(two_tower / "stablehlo")
    assert metadata["stablehlo"]["symbolic_dimensions"] == {
        "batch": "batch",
        "length": ["length_1", "length_2"],
    }


def test_each_artifact_computes_in_the_precision_it_names_and_no_other(exported):
    run_dir, model, _, _ = exported
    arrays = token_batch(model.get_layer("encoder").config, batch=5, seed=3)
    for name, precision in (
        ("stablehlo", "fp32"),
        ("stablehlo_bf16", "bf16"),
        ("stablehlo_fp16", "fp16"),
    ):
        assert read_metadata(run_dir / name)["precision"] == precision
        compiled = stablehlo_model.load(run_dir / name, precision, warm_batch=0)
        text = compiled.exported.mlir_module()
        assert stablehlo_model.computes_in(text) == precision
        logits = compiled.predict(arrays)
        assert_within_rounding(logits, keras_logits(model, arrays), precision)
        for other in {"fp32", "bf16", "fp16"} - {precision}:
            with pytest.raises(stablehlo_model.PrecisionMismatch, match=f"in {precision}, not"):
                stablehlo_model.load(run_dir / name, other, warm_batch=0)
    fp32 = stablehlo_model.load(run_dir / "stablehlo", "fp32", warm_batch=0).exported
    assert stablehlo_model.PRODUCT.search(fp32.mlir_module())  # it has products ...
    assert stablehlo_model.products_below_highest(fp32.mlir_module()) == []  # ... all HIGHEST


def test_the_batch_and_length_are_symbolic_where_the_model_allows(exported):
    run_dir = exported[0]
    metadata = read_metadata(run_dir / "stablehlo")
    assert metadata["stablehlo"]["symbolic_dimensions"] == {"batch": "batch", "length": ["length"]}
    compiled = stablehlo_model.load(run_dir / "stablehlo", "fp32", warm_batch=0)
    assert str(compiled.exported.in_avals[-1]) == "int32[batch,length]"
    from arena_tf.export.to_stablehlo import symbolic_dimensions

    pixels = tiny_config("linear", padding_id=None)  # every id a pixel: exactly max_len
    assert symbolic_dimensions(pixels) == {"batch": "batch", "length": None}


RUN_WITH_JAX_ALONE = """
import json, sys, numpy as np
from jax import export
exported = export.deserialize(bytearray(open("model.stablehlo", "rb").read()))
weights = np.load("weights.npz")
tokens = np.asarray(json.loads(sys.argv[1]), np.int32)
logits = exported.call([weights[f"arr_{i}"] for i in range(len(weights.files))], tokens)
print(json.dumps(np.asarray(logits).tolist()))
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"arena_tf", "export",
                                                                    "keras", "tensorflow"})))
"""


def test_the_artifact_runs_with_jax_alone_outside_the_project(exported):
    run_dir, model, _, _ = exported
    (tokens,) = token_batch(model.get_layer("encoder").config, batch=2, seed=9)
    alone = {"PATH": os.environ["PATH"], "JAX_PLATFORMS": "cpu"}  # no PYTHONPATH, -I: no project
    done = child(
        "-I",
        "-c",
        RUN_WITH_JAX_ALONE,
        json.dumps(tokens.tolist()),
        cwd=run_dir / "stablehlo",
        env=alone,
    )
    assert done.returncode == 0, done.stderr
    logits, imported = map(json.loads, done.stdout.splitlines())
    np.testing.assert_allclose(logits, keras_logits(model, [tokens]), atol=1e-4)
    assert imported == []


@pytest.mark.skipif(keras.backend.backend() == "jax", reason="Keras runs on JAX here")
def test_exporting_where_keras_is_not_on_jax_is_one_line_naming_the_fix(tmp_path):
    from arena_tf.export.errors import ExportUsageError
    from arena_tf.export.to_stablehlo import export_stablehlo

    with pytest.raises(ExportUsageError, match="expected KERAS_BACKEND=jax.*export/to_stablehlo"):
        export_stablehlo(tmp_path)
