"""The encoder's block layouts (`arena_tf.blocks`) equal their papers' blocks written out here
(float64, values and gradients of every weight), ignore what padded positions hold, and give a
classifier the same features whatever padding follows the tokens."""

import keras
import numpy as np
import pytest
from keras import ops

from arena_tf.blocks import BLOCKS
from arena_tf.config import ModelConfig
from arena_tf.encoder import Encoder
from tests.layers.state_space_oracles import assert_same_values_and_gradients, float64_inputs
from tests.layers.test_mega import mega_by_definition
from tests.layers.test_s4d import s4d_recurrence
from tests.layers.test_s5 import s5_recurrence

pytestmark = pytest.mark.float64

WIDTH, HEADS, HEAD_DIM, LENGTH = 6, 2, 3, 12
RECURRENCES = {"s4d": s4d_recurrence, "s5": s5_recurrence}
PARAMS = {
    "s4d": {"state_size": 8, "dt_min": 0.01, "dt_max": 0.5},
    "s5": {"state_size": 8, "dt_min": 0.01, "dt_max": 0.5},
    "mega": {"ema_dim": 4, "chunk_size": LENGTH},
    "linformer": {"projected_length": 4},
}


def layer_norm(norm, x):
    mean = ops.mean(x, axis=-1, keepdims=True)
    variance = ops.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / ops.sqrt(variance + 1e-6) * norm.gamma + norm.beta


def gelu(x):
    return 0.5 * x * (1 + ops.erf(x / np.sqrt(2)))


def zeroed(x, mask):
    return x * ops.cast(mask[..., None], "float64")


def s4_block(block, x, mask):
    """S4 (Gu et al. 2022; state-spaces/s4's residual block around its S4 layer): the state space
    on the residual stream, GELU, Linear(H, 2H), GLU, residual, then the norm."""
    ssm = block.attention
    s = RECURRENCES[ssm.mechanism](ssm, zeroed(ops.convert_to_tensor(x), mask))
    value, gate = ops.split(ssm.output_dense(gelu(s)), 2, axis=-1)
    return layer_norm(block.mixer_norm, x + value * ops.sigmoid(gate))


def s5_block(block, x, mask):
    """S5 (Smith et al. 2023; lindermanlab/S5's SequenceLayer, prenorm, half_glu2): the state
    space on the normalised input y, then y * sigmoid(W gelu(y)), added to the input."""
    ssm = block.attention
    s = RECURRENCES[ssm.mechanism](ssm, zeroed(layer_norm(block.mixer_norm, x), mask))
    return x + s * ops.sigmoid(ssm.output_dense(gelu(s)))


def mega_block(block, x, mask):
    """Mega (Ma et al. 2023; its LRA layer, post-norm): LN(X + phi (H - X)), then a SiLU
    feed-forward sublayer with its own residual and norm."""
    x = ops.convert_to_tensor(x)
    h = layer_norm(block.attention_norm, x + mega_by_definition(block.attention, x, mask))
    return layer_norm(block.mlp_norm, h + block.mlp_out(ops.silu(block.mlp_in(h))))


def transformer_block(block, x, mask):
    """Pre-LN Transformer (Vaswani et al. 2017 with the norm first, as LRA's encoder): the
    mechanism (its own oracle elsewhere) on LN x, added; then a GELU MLP on LN x, added."""
    x = x + block.attention(layer_norm(block.attention_norm, x), mask=mask)
    return x + block.mlp_out(gelu(block.mlp_in(layer_norm(block.mlp_norm, x))))


def make(layout, mechanism):
    block = BLOCKS[layout](
        mechanism,
        PARAMS[mechanism],
        HEADS,
        HEAD_DIM,
        mlp_dim=8,
        dropout=0.0,
        attention_dropout=0.0,
        max_len=LENGTH,
        dtype="float64",
    )
    block.build((2, LENGTH, WIDTH))
    return block


# Keras' LayerNormalization computes in float32 under JAX, float64 layer or not.
NORMED = 1e-10 if keras.backend.backend() == "tensorflow" else 1e-5
CASES = [
    ("s4", "s4d", s4_block, NORMED),
    ("s4", "s5", s4_block, NORMED),
    ("s5", "s5", s5_block, NORMED),
    ("s5", "s4d", s5_block, NORMED),
    # the attention's softmax is float32 inside the layer, as in every mechanism
    ("mega", "mega", mega_block, 1e-6),
    ("transformer", "linformer", transformer_block, NORMED),
]


@pytest.mark.parametrize("layout, mechanism, oracle, atol", CASES)
def test_block_equals_its_paper(layout, mechanism, oracle, atol):
    x, mask = float64_inputs(length=LENGTH, width=WIDTH)
    assert_same_values_and_gradients(make(layout, mechanism), oracle, x, mask, atol=atol)


@pytest.mark.parametrize("layout, mechanism", [case[:2] for case in CASES])
def test_padded_positions_change_no_real_output(layout, mechanism):
    block = make(layout, mechanism)
    x, mask = float64_inputs(length=LENGTH, width=WIDTH)
    noisy = np.where(mask[..., None], x, 100 * np.random.default_rng(1).normal(size=x.shape))
    real = np.asarray(block(x, mask=mask))[mask]
    np.testing.assert_allclose(np.asarray(block(noisy, mask=mask))[mask], real, atol=1e-6)


@pytest.mark.parametrize("layout, mechanism", [case[:2] for case in CASES])
def test_a_classifier_reads_the_same_features_whatever_padding_follows(layout, mechanism):
    config = ModelConfig(
        attention=mechanism,
        attention_params=PARAMS[mechanism],
        block=layout,
        num_layers=2,
        num_heads=HEADS,
        emb_dim=WIDTH,
        qkv_dim=4,
        mlp_dim=8,
        dropout=0.0,
        attention_dropout=0.0,
        max_len=LENGTH,
        vocab_size=10,
        pooling="mean",
        position_embedding="none",
    )
    encoder = Encoder(config)
    assert [block.attention.channels for block in encoder.blocks if layout in ("s4", "s5")] in (
        [],
        [WIDTH, WIDTH],
    )  # the residual stream's channels, whatever qkv_dim says
    tokens = np.random.default_rng(2).integers(1, 10, size=(2, LENGTH - 4))
    padded = np.pad(tokens, [[0, 0], [0, 4]])
    np.testing.assert_allclose(encoder(padded), encoder(tokens), atol=1e-5)


def test_a_layout_refuses_a_mechanism_it_cannot_hold():
    with pytest.raises(ValueError, match="model.block=s4 cannot hold model.attention=linformer"):
        make("s4", "linformer")
    with pytest.raises(ValueError, match="model.block=mega cannot hold model.attention=s4d"):
        make("mega", "s4d")


def test_attention_params_cannot_undo_the_layout():
    with pytest.raises(ValueError, match="sets output_gate, which the 's4' block sets itself"):
        BLOCKS["s4"](
            "s4d",
            {"output_gate": "none"},
            HEADS,
            HEAD_DIM,
            mlp_dim=8,
            dropout=0.0,
            attention_dropout=0.0,
            max_len=LENGTH,
        )
