"""Sub-quadratic proof: every non-quadratic mechanism runs a forward pass at length 131,072.

One head of width 32, batch 1: a length x length float32 tensor would need 64 GiB (16 GiB as
bool), so a mechanism that builds one either fails for memory or shows it in its peak resident
memory, which must stay under PEAK_GIB on any machine. Each runs in its own process so its memory
is its own (forked from one that has imported TensorFlow, tests/forked_command.py).
"""

import json

import pytest

import arena_tf.layers as layers

LENGTH = 131_072
PEAK_GIB = 8  # far above what the mechanisms need here (a few GiB, TensorFlow included)

SUBQUADRATIC = [name for name in layers.available() if not layers.lookup(name).quadratic]

# Parameters at this length where the default would not be the mechanism's usual regime:
# sparse uses Child et al.'s block of about sqrt(L), which makes it O(L^1.5).
LONG_PARAMS = {"sparse": {"block_size": 512, "summary_size": 8}}

SCRIPT = """
import json, resource, sys, numpy as np, arena_tf.layers as layers
name, length, params = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
layer = layers.get(name, num_heads=1, head_dim=32, max_len=length, **params)
x = np.random.default_rng(0).normal(size=(1, length, 32)).astype("float32")
mask = np.ones((1, length), bool)
mask[0, -1000:] = False
y = np.asarray(layer(x, mask=mask))
assert y.shape == (1, length, 32) and np.isfinite(y).all(), y.shape
print("ok", y.shape)
print("peak GiB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)  # ru_maxrss: KiB
"""


# The layers are the same keras.ops code under every backend, so what this shows about their
# memory is the TensorFlow job's to show; under JAX each run would first compile its eager ops for
# 10-25 s (s5's associative scan: about 22 s of a 23 s run), 3x the TensorFlow job's time.
@pytest.mark.tensorflow_only("a duplicate of the TensorFlow job (the same keras.ops code)")
@pytest.mark.slow
@pytest.mark.parametrize("name", SUBQUADRATIC)
def test_forward_pass_at_length_131072(name, command_server, tmp_path):
    result = command_server.run(
        ["-c", SCRIPT, name, str(LENGTH), json.dumps(LONG_PARAMS.get(name, {}))],
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ok (1, 131072, 32)" in result.stdout
    peak = float(result.stdout.split("peak GiB")[1])
    assert peak < PEAK_GIB, f"{name} peaked at {peak:.1f} GiB at {LENGTH:,} tokens"
