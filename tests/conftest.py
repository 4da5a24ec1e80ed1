"""Test settings: quiet TensorFlow, deterministic seeds, float32 policy restored after each test.

Markers of their own (pytest.ini lists them): `slow` for the tests that start processes or train
for a minute or more (`pytest -m "not slow"` is the fast loop while working); `long` for the
learning checks of half an hour, run only with `--long` (`make test-long`). Two for the backends
(KERAS_BACKEND=tensorflow, the default, or jax):
- `@pytest.mark.tensorflow_only("why")`: checks something only TensorFlow has (tf.function graphs,
  their ops), or duplicates what the TensorFlow job shows; skipped under any other backend, with
  the reason given.
- `@pytest.mark.float64`: the test computes in float64; under JAX, 64-bit types are enabled for
  it (JAX truncates float64 to float32 otherwise), other tests run with JAX's defaults.
"""

import os

# as every arena_tf command (cli.quiet_tensorflow)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# Under JAX the tests' tiny shapes leave the suite waiting on XLA compiling (each eager op is
# compiled, and Keras' fit and predict jit), not on the compiled code; LLVM's optimisation passes
# are most of the compile time (KERAS_BACKEND=jax pytest tests/layers/test_remat.py: 169 s at XLA's
# default level, 77 s at level 0 on a 2-core AMD EPYC, Zen 1). XLA compiles the same HLO, only the
# machine code is less optimised (last bits may differ, within the tests' tolerances). Children the
# tests start inherit it; a level already in XLA_FLAGS is kept. The TensorFlow job keeps XLA's
# default (it gained little at level 0: see the commit that set this).
if os.environ.get(
    "KERAS_BACKEND"
) == "jax" and "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(
        [os.environ.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0"]
    ).strip()

import keras  # noqa: E402
import pytest  # noqa: E402

BACKEND = keras.backend.backend()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "tensorflow_only(reason): TensorFlow-only check; skipped under other backends"
    )
    config.addinivalue_line("markers", "float64: computes in float64 (enables x64 under JAX)")


def pytest_addoption(parser):
    parser.addoption(
        "--long",
        action="store_true",
        help="also run the tests marked long (training for about half an hour)",
    )


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--long"):
        for item in items:
            if item.get_closest_marker("long") is not None:
                item.add_marker(
                    pytest.mark.skip(reason="about 30 minutes: run with --long (make test-long)")
                )
    if BACKEND == "tensorflow":
        return
    for item in items:
        marker = item.get_closest_marker("tensorflow_only")
        if marker is not None:
            reason = marker.args[0] if marker.args else "a TensorFlow-only check"
            item.add_marker(pytest.mark.skip(reason=f"TensorFlow only ({BACKEND}): {reason}"))


@pytest.fixture(autouse=True)
def _float32_policy_and_seed():
    keras.utils.set_random_seed(0)
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(autouse=True)
def _float64_where_marked(request):
    """64-bit types under JAX for the tests marked float64; nothing to do under TensorFlow."""
    if BACKEND != "jax" or request.node.get_closest_marker("float64") is None:
        yield
        return
    import jax

    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="session")
def command_server():
    """`command_server.run(["-m", module, ...], cwd=..., env=...)`: a command forked from a process
    that has imported TensorFlow already (tests/forked_command.py), one per test process."""
    from tests.forked_command import CommandServer

    with CommandServer() as server:
        yield server
