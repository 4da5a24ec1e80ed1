"""TF-side reduced precision: SavedModels computing in bfloat16 / float16 with int32 tokens in and
float32 logits out, checked against the FP32 Keras model (with accuracy, on labelled examples)."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from arena_tf.export.metadata import read_metadata
from arena_tf.export.to_savedmodel import export_savedmodel
from tests.export.conftest import LENGTH, write_run_dir
from tests.export.test_examples import LISTOPS_TEST, write_listops_files

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = pytest.mark.xdist_group("test_reduced_precision")


def matmul_types(saved_model):
    """Element types of the MatMul / BatchMatMul ops in the serving function and its library."""
    graph_def = saved_model.signatures["serving_default"].graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return {
        tf.as_dtype(n.attr["T"].type).name
        for n in nodes
        if n.op in ("MatMul", "BatchMatMulV2", "BatchMatMulV3")
    }


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A performer run (float32 kernel features inside) on real ListOps test examples."""
    keras.utils.set_random_seed(0)
    root = tmp_path_factory.mktemp("precision")
    data_dir = write_listops_files(root / "listops")
    run_dir, model = write_run_dir(
        root / "run",
        "performer",
        num_classes=10,
        task={"name": "listops", "data_dir": str(data_dir)},
    )
    reports = {path.name: report for path, report in export_savedmodel(run_dir, count=8).items()}
    return run_dir, model, reports


@pytest.mark.parametrize(
    "name, dtype",
    [("saved_model", "float32"), ("saved_model_bf16", "bfloat16"), ("saved_model_fp16", "float16")],
)
def test_saved_model_computes_in_its_precision_behind_the_same_signature(exported, name, dtype):
    run_dir, model, _ = exported
    loaded = tf.saved_model.load(str(run_dir / name))
    types = matmul_types(loaded)
    assert dtype in types and types <= {dtype, "float32"}  # kernel features stay float32
    signature = loaded.signatures["serving_default"]
    (spec,) = signature.structured_input_signature[1].values()
    assert (spec.name, spec.dtype, spec.shape.as_list()) == ("tokens", tf.int32, [None, None])
    tokens = np.random.default_rng(5).integers(1, 16, size=(6, LENGTH)).astype("int32")
    logits = signature(tokens=tf.constant(tokens))["logits"]
    assert logits.dtype == tf.float32
    reference = np.asarray(model(tokens))
    assert np.mean(logits.numpy().argmax(-1) == reference.argmax(-1)) == 1.0
    assert (
        read_metadata(run_dir / name)["precision"]
        == {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}[dtype]
    )


@pytest.mark.parametrize("name", ["saved_model_bf16", "saved_model_fp16"])
def test_reduced_precision_parity_checks_error_and_decided_examples(exported, name):
    run_dir, _, reports = exported
    report = json.loads((run_dir / f"{name}.parity.json").read_text())
    assert report == json.loads(json.dumps(reports[name]))
    assert report["passed"] and report["examples"]["labelled"]
    assert report["examples"]["count"] == len(LISTOPS_TEST)
    checks = {c["name"] for c in report["checks"]}
    assert {
        "all logits finite",
        "median logit error vs keras fp32",
        "class flips among decided examples",
        "int64 ids vs int32 ids: max |logit difference|",
    } <= checks
    # really reduced: the logits differ from FP32 by rounding, within the expected error
    assert 1e-6 < report["comparisons"]["keras_fp32"]["max_abs_diff"] < 0.1
    error = report["error"]
    assert 0 < error["measured_error"]["median"] <= error["expected_logit_error"]
    assert set(report["accuracy"]) == {"keras_fp32", "artifact"}  # reported, not checked


def test_model_trained_in_mixed_precision_still_exports_fp32_compute(tmp_path):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    run_dir, _ = write_run_dir(tmp_path, "full")
    keras.mixed_precision.set_global_policy("float32")
    (report,) = export_savedmodel(run_dir, ["fp32"], count=8).values()
    assert matmul_types(tf.saved_model.load(str(run_dir / "saved_model"))) == {"float32"}
    assert report["comparisons"]["keras_fp32"]["max_abs_diff"] <= 1e-4
