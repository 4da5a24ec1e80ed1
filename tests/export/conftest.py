"""Tiny run directories for the export tests: model.keras + a minimal config.yaml, built directly.

`write_run_dir(directory, mechanism, two_tower=False)` saves an untrained tiny classifier (one
layer, width 16, length 64) whose config.yaml points the task at a missing data directory, so the
parity check runs on generated examples and never reads or generates task data.

Session fixture `exported_linear`: one linear-attention run exported once to the FP32 SavedModel,
FP32 ONNX and FP16 ONNX, for the tests that only read artifacts (they must not change it).
"""

import pathlib

import numpy as np
import pytest
import yaml

import arena_tf.layers as layers
from arena_tf import tasks
from arena_tf.catalogue import block_of
from arena_tf.config import ConfigError, ModelConfig
from arena_tf.export.parity import Thresholds, expected_error
from arena_tf.models import build_classifier

MECHANISMS = layers.available()
# Two towers (two inputs, one shared encoder run on each) change the head, not the mechanism: the
# export modules check them on kinds that differ inside the encoder (exact softmax, weights sized
# by the length, hashing, a state space); every mechanism is exported with one tower.
TWO_TOWER_MECHANISMS = ("full", "linformer", "reformer", "s4d")
LENGTH = 64
PARITY_EXAMPLES = 32

# Blocks, windows and chunks shorter than LENGTH, so each pattern is really sparse.
SMALL_PARAMS = {
    "bigbird": {"block_size": 8, "num_random_blocks": 1},
    "linformer": {"projected_length": 8},
    "local": {"block_size": 16},
    "longformer": {"window": 16, "global_positions": [0]},
    "mega": {"ema_dim": 4, "chunk_size": 16},
    "performer": {"num_features": 16},
    "reformer": {"n_hashes": 2, "n_buckets": 4, "chunk_size": 16},
    "s4d": {"state_size": 8},
    "s5": {"state_size": 8},
    "sinkhorn": {"block_size": 16},
    "sparse": {"block_size": 16, "summary_size": 2},
}


def task_of(two_tower):
    """The task of a tiny run: ListOps for one input, retrieval for two."""
    return "retrieval" if two_tower else "listops"


def tiny_config(mechanism, two_tower=False, task=None, **overrides):
    """A one-layer ModelConfig of `mechanism` at LENGTH tokens, in the block `--model` gives it
    (configs/models/: the state-space mixers in their papers' blocks), with the vocabulary,
    classes, padding and inputs of task `task` (default `task_of(two_tower)`), as training
    derives them."""
    name = task or task_of(two_tower)
    try:
        decided = tasks.get(name, max_len=overrides.get("max_len", LENGTH)).model_fields()
    except ConfigError:  # a task of fixed length (pixels: 32 x 32)
        decided = tasks.get(name).model_fields()
    fields = dict(
        attention=mechanism,
        attention_params=SMALL_PARAMS.get(mechanism, {}),
        block=block_of(mechanism),
        num_layers=1,
        num_heads=2,
        emb_dim=16,
        qkv_dim=16,
        mlp_dim=32,
        dropout=0.0,
        attention_dropout=0.0,
        **decided,
    )
    return ModelConfig(**{**fields, **overrides})


def write_run_dir(directory, mechanism, two_tower=False, task=None, **overrides):
    """A run directory holding an untrained tiny classifier; (directory, keras model)."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    task = {"name": task_of(two_tower), "data_dir": str(directory / "no-data"), **(task or {})}
    config = tiny_config(mechanism, two_tower, task["name"], **overrides)
    model = build_classifier(config)
    model.save(directory / "model.keras")
    task = {"max_len": config.max_len, **task}
    saved = {"task": task, "model": config.to_dict()}
    (directory / "config.yaml").write_text(yaml.safe_dump(saved))
    return directory, model


def token_batch(config, batch=5, seed=1):
    """Fresh int32 inputs (not the parity examples): random ids, later rows padded at the end."""
    rng = np.random.default_rng(seed)
    arrays = []
    for _ in range(2 if config.two_tower else 1):
        ids = rng.integers(1, config.vocab_size, size=(batch, config.max_len)).astype("int32")
        for row in range(1, batch):
            ids[row, config.max_len - 7 * row :] = 0
        arrays.append(ids)
    return arrays


def keras_logits(model, arrays):
    """The Keras model's logits for a list of input arrays (one, or two towers)."""
    return np.asarray(model(arrays[0] if len(arrays) == 1 else arrays, training=False))


def assert_within_rounding(logits, reference, precision):
    """Logits of an artifact of `precision` within what the parity check allows of the FP32
    reference on these inputs (arena_tf/export/parity.py): 1e-4 in FP32; in reduced precision every
    logit within the expected logit error K * u * S, S the RMS of these reference logits (a wrong
    graph misses by about S)."""
    if precision == "fp32":
        np.testing.assert_allclose(logits, reference, atol=Thresholds().fp32_max_abs_diff)
        return
    error = expected_error(precision, logits, reference, Thresholds())
    measured, allowed = error["measured_error"]["max"], error["expected_logit_error"]
    assert measured <= allowed, f"{precision} logits off by {measured:.3g}, over {allowed:.3g}"


def feeds(model, arrays):
    """The ONNX / SavedModel feed {input name: array} of the Keras model's inputs."""
    return {tensor.name.split(":")[0]: array for tensor, array in zip(model.inputs, arrays)}


def onnx_session(path):
    """An ONNX Runtime session of the model file at `path` on the CPU provider."""
    import onnxruntime

    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def onnx_logits(path, model, arrays):
    """(session, logits) of the ONNX file at `path` on inputs shaped like the Keras model's."""
    session = onnx_session(path)
    return session, session.run(["logits"], feeds(model, arrays))[0]


def case_id(case):
    """'linear-one' / 'linear-two' for a (mechanism, two_tower) case."""
    return f"{case[0]}-{'two' if case[1] else 'one'}"


def case_params(cases):
    """Fixture params of (mechanism, two_tower) cases, each in its own xdist group: under
    `pytest -n 2 --dist loadgroup` (make test) every test of a case runs in the worker that
    exported it."""
    return [
        pytest.param(case, id=case_id(case), marks=pytest.mark.xdist_group(case_id(case)))
        for case in cases
    ]


@pytest.fixture(scope="session")
def tiny_exports(tmp_path_factory):
    """`export_of(case, export)`: (run directory, Keras model, {artifact name: parity report}) of
    a tiny untrained run of `case` (mechanism, two_tower) exported by `export(run_dir, count=...)`.

    Each run is written and each export made once per test process, however pytest orders the
    tests; the exports of one case share its run directory, so the FP32 SavedModel the ONNX and
    OpenVINO exports convert is written by the first of them (its report is in that one's dict,
    its parity.json beside it for all)."""
    import keras

    runs, exports = {}, {}

    def export_of(case, export):
        if case not in runs:
            keras.utils.set_random_seed(0)
            runs[case] = write_run_dir(tmp_path_factory.mktemp(case_id(case)), *case)
        if (case, export) not in exports:
            run_dir, model = runs[case]
            reports = export(run_dir, count=PARITY_EXAMPLES)
            exports[case, export] = (
                run_dir,
                model,
                {path.name: report for path, report in reports.items()},
            )
        return exports[case, export]

    return export_of


@pytest.fixture(scope="session")
def exported_linear(tmp_path_factory):
    """(run directory, Keras model) of a linear-attention run with saved_model/, model.onnx and
    model.fp16.onnx exported; read only."""
    import keras

    from arena_tf.export.to_onnx import export_onnx

    keras.utils.set_random_seed(0)
    run_dir, model = write_run_dir(tmp_path_factory.mktemp("exported-linear"), "linear")
    export_onnx(run_dir, count=8)
    return run_dir, model
