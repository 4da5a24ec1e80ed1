"""Sub-quadratic proof: every non-quadratic mechanism runs a forward pass at length 131,072.

One head of width 32, batch 1: a length x length float32 tensor would need 64 GiB, more than this
machine has, so a mechanism that builds one fails here. Each runs in its own process so its memory
is its own.
"""

import subprocess
import sys

import pytest

import arena_tf.layers as layers

LENGTH = 131_072

SUBQUADRATIC = [name for name in layers.available() if not layers.lookup(name).quadratic]

SCRIPT = """
import sys, numpy as np, arena_tf.layers as layers
name, length = sys.argv[1], int(sys.argv[2])
layer = layers.get(name, num_heads=1, head_dim=32, max_len=length)
x = np.random.default_rng(0).normal(size=(1, length, 32)).astype("float32")
mask = np.ones((1, length), bool)
mask[0, -1000:] = False
y = np.asarray(layer(x, mask=mask))
assert y.shape == (1, length, 32) and np.isfinite(y).all(), y.shape
print("ok", y.shape)
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", SUBQUADRATIC)
def test_forward_pass_at_length_131072(name):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, name, str(LENGTH)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ok (1, 131072, 32)" in result.stdout
