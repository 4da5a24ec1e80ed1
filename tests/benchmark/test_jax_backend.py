"""`layers --backend jax`: the results file (backend, device, rows, finite positive times and
memory), a JAX measurement without TensorFlow, the jax.nn.dot_product_attention peer against the
dense formula, the one-line refusals, and peers.py not importing layer_sweep.py. No timing values
are asserted, only structure and correctness."""

import ast
import importlib.util
import json
import math
import os
import pathlib
import subprocess
import sys
from argparse import Namespace

import keras
import numpy as np
import pytest

import arena_tf.layers as attention_layers
from arena_tf.benchmark import __main__ as cli
from arena_tf.benchmark import backends, layer_sweep, memory, peers
from arena_tf.cli import UsageError
from tests.one_line import assert_one_error_line

pytestmark = pytest.mark.slow  # starts processes

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY = [
    "--lengths",
    "64",
    "--batch",
    "1",
    "--heads",
    "2",
    "--head-dim",
    "8",
    "--repeats",
    "2",
    "--matmul-size",
    "64",
    "--agreement-length",
    "32",
]
needs_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="jax is not installed"
)


def finite_positive(value):
    return isinstance(value, float) and math.isfinite(value) and value > 0


def check_stages(row):
    """Both stages measured: finite positive times, memory and rate; a known memory source."""
    assert "error" not in row, row.get("error")
    for stage in ("forward", "train"):
        stats = row[stage]
        assert finite_positive(stats["median_ms"]) and len(stats["samples_ms"]) == 2
        assert finite_positive(stats["peak_mb"]) and finite_positive(stats["compile_s"])
        assert stats["peak_source"] in memory.PEAK_SOURCES
        assert finite_positive(stats["gflops"])


@needs_jax
def test_jax_results_record_the_backend_device_and_rows(tmp_path, capsys):
    """Measured in children with KERAS_BACKEND=jax, as the command does by default."""
    output = tmp_path / "layers.json"
    assert (
        cli.main(
            [
                "layers",
                "--backend",
                "jax",
                "--mechanisms",
                "full",
                "linear",
                "--peers",
                *TINY,
                "--output",
                str(output),
            ]
        )
        == 0
    )
    results = json.loads(output.read_text())
    backend = results["backend"]
    assert backend["name"] == "jax" and backend["kind"] and backend["platform"]
    assert "jax" in results["machine"]["versions"]
    assert "tensorflow" not in results["machine"]["versions"]
    assert all(finite_positive(rate["gflops"]) for rate in results["matmul"])
    assert [row["label"] for row in results["rows"]] == ["full", "linear"]
    for row in results["rows"]:
        check_stages(row)
    if backend["platform"] == "cpu":
        assert {row["train"]["peak_source"] for row in results["rows"]} == {"xla_memory_analysis"}
    assert "backend: JAX on" in capsys.readouterr().out


@needs_jax
def test_a_jax_measurement_imports_no_tensorflow(tmp_path):
    """Every JAX measurement (matmul, agreement, our layer, the peer) in one KERAS_BACKEND=jax
    process, through the command's --in-process path: no TensorFlow module is imported."""
    output = tmp_path / "layers.json"
    script = (
        "import json, sys\n"
        "from arena_tf.benchmark.__main__ import main\n"
        f"code = main(['layers', '--backend', 'jax', '--mechanisms', 'full', *{TINY!r}, "
        f"'--in-process', '--output', {str(output)!r}])\n"
        "print(json.dumps([code, sorted(name for name in sys.modules "
        "if name.split('.')[0] == 'tensorflow')]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "KERAS_BACKEND": "jax"},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    code, imported = json.loads(done.stdout.splitlines()[-1])
    assert code == 0 and imported == []
    results = json.loads(output.read_text())
    implementation = results["backend"]["attention_implementation"]
    assert implementation == "xla" or results["backend"]["platform"] == "gpu"
    rows = {row["label"]: row for row in results["rows"]}
    assert set(rows) == {"full", f"jax_dpa[implementation={implementation}]"}
    for row in rows.values():
        check_stages(row)
    [agreement] = results["agreement"]
    assert agreement["params"] == {"implementation": implementation}
    assert agreement["agrees"] and agreement["relative_difference"] < 1e-5


def softmax_attention(q, k, v):
    """The dense formula in float64 NumPy: softmax(q k^T / sqrt(d)) v, [batch, length, heads, d]."""
    logits = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", weights, v)


@needs_jax
def test_the_dot_product_attention_peer_computes_the_dense_formula():
    q, k, v = np.random.default_rng(0).standard_normal((3, 2, 16, 2, 8)).astype(np.float32)
    got = np.asarray(peers.dot_product_attention(q, k, v, "xla"))
    expected = softmax_attention(*(t.astype(np.float64) for t in (q, k, v)))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    full = attention_layers.get("full", num_heads=2, head_dim=8)
    heads_first = [np.transpose(t, (0, 2, 1, 3)) for t in (q, k, v)]
    ours = np.asarray(full.attend(*heads_first, np.ones((2, 16), bool)))
    np.testing.assert_allclose(got, np.transpose(ours, (0, 2, 1, 3)), rtol=1e-5, atol=1e-6)


def test_an_unknown_backend_is_one_error_line(capsys):
    assert cli.main(["layers", "--backend", "torch", "--output", "/nonexistent/x.json"]) == 2
    assert_one_error_line(
        capsys.readouterr().err, "--backend torch", "expected one of tensorflow, jax"
    )


def test_jax_when_it_is_not_installed_is_one_error_line(monkeypatch, capsys):
    found = importlib.util.find_spec
    monkeypatch.setattr(
        backends.importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "jax" else found(name, *rest),
    )
    assert cli.main(["layers", "--backend", "jax", "--output", "/nonexistent/x.json"]) == 2
    assert_one_error_line(capsys.readouterr().err, "needs the jax package, which is not installed")


@needs_jax
def test_a_peer_of_another_backend_is_one_error_line(capsys):
    assert (
        cli.main(
            [
                "layers",
                "--backend",
                "jax",
                "--peers",
                "keras_mha",
                "--output",
                "/nonexistent/x.json",
            ]
        )
        == 2
    )
    assert_one_error_line(
        capsys.readouterr().err, "--peers keras_mha: not a peer under --backend jax"
    )


@needs_jax
def test_in_process_under_another_backend_is_one_error_line(capsys):
    here = keras.backend.backend()
    other = "jax" if here == "tensorflow" else "tensorflow"
    assert (
        cli.main(["layers", "--backend", other, "--in-process", "--output", "/nonexistent/x.json"])
        == 2
    )
    assert_one_error_line(
        capsys.readouterr().err,
        f"--in-process measures in this process, whose Keras backend is {here}",
    )


def test_without_peers_each_backend_compares_its_own():
    def chosen(backend, given=None):
        options = Namespace(backend=backend, peers=given, in_process=False)
        layer_sweep.chosen_backend(options)
        return options.peers

    assert cli.parse_args(["layers"]).peers is None
    assert chosen("tensorflow") == list(peers.PEERS)
    assert chosen("tensorflow", []) == []
    if importlib.util.find_spec("jax"):
        assert chosen("jax") == ["jax_dpa"]
    with pytest.raises(UsageError):
        chosen("tensorflow", ["jax_dpa"])


def test_a_peer_row_is_labelled_with_its_device_parameters():
    plan = layer_sweep.entries(
        ["full"], ["keras_mha", "jax_dpa"], {"attention_implementation": "xla"}
    )
    assert [(entry.label, entry.params) for entry in plan] == [
        ("full", {}),
        ("jax_dpa[implementation=xla]", {"implementation": "xla"}),
        ("keras_mha", {}),
    ]


def imported_modules(path):
    """Every module a file imports, at its top or inside functions."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_peers_does_not_import_layers():
    benchmark = ROOT / "arena_tf" / "benchmark"
    assert "arena_tf.benchmark.layer_sweep" not in imported_modules(benchmark / "peers.py")
    assert "arena_tf.benchmark.peers" in imported_modules(benchmark / "layer_sweep.py")
