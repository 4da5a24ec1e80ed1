"""Why exports trace the state-space mixers in their export form (arena_tf/layers/long_conv.py,
mixer.exact_gelu): the FFT convolution and TF's exact GELU do not survive tf2onnx + ONNX Runtime,
the depthwise convolution and the erf GELU do. If the first test starts failing, a converter has
learnt the FFT and the export form can go."""

import numpy as np
import onnxruntime as ort
import pytest
import tensorflow as tf
import tf2onnx

from arena_tf.layers import long_conv
from arena_tf.layers.mixer import exact_gelu

LENGTH, CHANNELS = 13, 3
SPECS = [tf.TensorSpec([None, LENGTH, CHANNELS], tf.float32), tf.TensorSpec([CHANNELS, LENGTH])]


def onnx_run(function, *arrays):
    """`function` through tf2onnx (opset 17) and ONNX Runtime; raises where either refuses."""
    model, _ = tf2onnx.convert.from_function(tf.function(function), SPECS[: len(arrays)], opset=17)
    session = ort.InferenceSession(model.SerializeToString())
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, arrays)))[0]


def arrays():
    rng = np.random.default_rng(0)
    return (
        rng.normal(size=(2, LENGTH, CHANNELS)).astype("float32"),
        rng.normal(size=(CHANNELS, LENGTH)).astype("float32"),
    )


def test_fft_convolution_and_tf_exact_gelu_do_not_export():
    u, kernel = arrays()
    with pytest.raises(Exception):
        onnx_run(long_conv.fft_conv, u, kernel)
    with pytest.raises(Exception):
        onnx_run(lambda x: tf.nn.gelu(x, approximate=False), u)


def test_export_forms_export_and_equal_the_training_forms():
    u, kernel = arrays()
    np.testing.assert_allclose(
        onnx_run(long_conv.direct_conv, u, kernel), long_conv.fft_conv(u, kernel), atol=1e-5
    )
    np.testing.assert_allclose(onnx_run(exact_gelu, u), tf.nn.gelu(u, approximate=False), atol=1e-6)
