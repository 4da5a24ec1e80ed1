"""build_classifier: one input or two towers, save/load, padding, and clear config errors."""

import numpy as np
import pytest

from arena_tf.config import POSITION_EMBEDDINGS, ConfigError, ModelConfig
from arena_tf.encoder import POSITION_TABLES, PositionEmbedding, sinusoids
from arena_tf.models import build_classifier, load_classifier


def tiny(**overrides):
    base = dict(
        num_layers=1,
        num_heads=2,
        emb_dim=16,
        qkv_dim=16,
        mlp_dim=32,
        max_len=20,
        vocab_size=30,
        num_classes=3,
        dropout=0.0,
        attention_dropout=0.0,
    )
    return ModelConfig(**{**base, **overrides})


def tokens(batch=3, length=20, seed=0):
    return np.random.default_rng(seed).integers(1, 30, size=(batch, length)).astype("int32")


@pytest.mark.parametrize("pooling", ["cls", "mean"])
@pytest.mark.parametrize("position", ["sinusoidal", "learned", "none"])
def test_one_input_classifier_gives_logits_and_ignores_appended_padding(pooling, position):
    model = build_classifier(tiny(pooling=pooling, position_embedding=position))
    x = tokens()
    x[:, 12:] = 0
    np.testing.assert_allclose(model(x), model(x[:, :12]), atol=1e-5)
    assert model(x).shape == (3, 3)


def test_without_positions_full_attention_with_mean_pooling_ignores_token_order():
    model = build_classifier(tiny(pooling="mean", position_embedding="none"))
    x = tokens()
    shuffled = x[:, np.random.default_rng(1).permutation(x.shape[1])]
    np.testing.assert_allclose(model(x), model(shuffled), atol=1e-5)
    with_positions = build_classifier(tiny(pooling="mean", position_embedding="sinusoidal"))
    assert not np.allclose(with_positions(x), with_positions(shuffled), atol=1e-5)


def dense_sinusoids(positions, width):
    """The sinusoidal table written out: column 2i is sin(p / 10000^(2i / width)), 2i + 1 cos."""
    columns = np.arange(width)
    angles = np.asarray(positions, float)[:, None] / 10000.0 ** (2 * (columns // 2) / width)
    return np.where(columns % 2 == 0, np.sin(angles), np.cos(angles))


@pytest.mark.parametrize("width", [6, 7])
def test_sinusoids_equal_the_written_out_formula_for_even_and_odd_widths(width):
    positions = np.arange(40, dtype="float32")
    np.testing.assert_allclose(
        np.asarray(sinusoids(positions, width)), dense_sinusoids(positions, width), atol=1e-5
    )


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_row_and_column_positions_give_each_pixel_its_row_and_its_column(pooling):
    """A 4 x 4 image read row by row, width 13: pixel (r, c) gets the sine table of r in the first
    6 columns and of c in the other 7; a CLS token in front gets nothing."""
    cls = int(pooling == "cls")
    layer = PositionEmbedding(16 + cls, "sinusoidal_2d", prefix=cls)
    added = np.asarray(layer(np.zeros((1, 16 + cls, 13))))[0]
    for row, column in [(0, 0), (1, 3), (3, 2)]:
        expected = np.concatenate([dense_sinusoids([row], 6)[0], dense_sinusoids([column], 7)[0]])
        np.testing.assert_allclose(added[cls + 4 * row + column], expected, atol=1e-5)
    assert not added[:cls].any()


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_a_classifier_with_row_and_column_positions_saves_and_loads(pooling, tmp_path):
    model = build_classifier(
        tiny(pooling=pooling, position_embedding="sinusoidal_2d", max_len=16, padding_id=None)
    )
    encoder = model.get_layer("encoder").position_embedding
    assert (encoder.kind, encoder.prefix) == ("sinusoidal_2d", int(pooling == "cls"))
    x = tokens(length=16)
    model.save(tmp_path / "model.keras")
    np.testing.assert_array_equal(
        model.predict(x, verbose=0), load_classifier(tmp_path / "model.keras").predict(x, verbose=0)
    )


@pytest.mark.parametrize("max_len, pooling", [(18, "mean"), (17, "mean"), (18, "cls")])
def test_row_and_column_positions_refuse_a_sequence_that_is_not_a_square_image(max_len, pooling):
    encoder_len = max_len + (pooling == "cls")
    with pytest.raises(ValueError, match=f"square image, but max_len is {encoder_len}"):
        build_classifier(tiny(pooling=pooling, position_embedding="sinusoidal_2d", max_len=max_len))


def test_every_position_embedding_setting_has_a_table():
    assert set(POSITION_TABLES) == set(POSITION_EMBEDDINGS)


def test_two_tower_shares_one_encoder_and_is_symmetric_in_shape():
    model = build_classifier(tiny(two_tower=True, num_classes=2))
    assert [i.name for i in model.inputs] == ["tokens_1", "tokens_2"]
    assert len([layer for layer in model.layers if layer.name == "encoder"]) == 1
    assert model([tokens(), tokens(seed=1)]).shape == (3, 2)


def test_two_tower_head_sees_both_inputs():
    model = build_classifier(tiny(two_tower=True, num_classes=2))
    a, b = tokens(), tokens(seed=1)
    assert not np.allclose(model([a, b]), model([a, a]))


@pytest.mark.parametrize("two_tower", [False, True])
def test_keras_save_and_load_gives_identical_logits(two_tower, tmp_path):
    model = build_classifier(tiny(two_tower=two_tower, num_classes=2))
    inputs = [tokens(), tokens(seed=1)] if two_tower else tokens()
    model.save(tmp_path / "model.keras")
    loaded = load_classifier(tmp_path / "model.keras")
    np.testing.assert_array_equal(
        model.predict(inputs, verbose=0), loaded.predict(inputs, verbose=0)
    )


def test_pixels_without_padding_id_treat_zero_as_a_real_token():
    model = build_classifier(tiny(padding_id=None, vocab_size=256, pooling="mean"))
    x = tokens()
    zeroed = x.copy()
    zeroed[:, 12:] = 0
    assert not np.allclose(model(x), model(zeroed))
    assert not np.allclose(model(zeroed), model(zeroed[:, :12]))


def test_intensity_embedding_reads_ids_as_brightness_from_minus_one_to_one():
    from arena_tf.encoder import IntensityEmbedding

    layer = IntensityEmbedding(256, 8)
    ids = np.array([[0, 51, 52, 255]])
    out = np.asarray(layer(ids))[0]
    scale, shift = np.asarray(layer.scale), np.asarray(layer.shift)
    levels = np.array([-1.0, 51 * 2 / 255 - 1, 52 * 2 / 255 - 1, 1.0])
    np.testing.assert_allclose(out, levels[:, None] * scale + shift, rtol=1e-6, atol=1e-6)


def test_pixel_classifier_with_intensity_input_sees_brightness_and_saves(tmp_path):
    model = build_classifier(tiny(padding_id=None, vocab_size=256, token_embedding="intensity"))
    x = tokens()
    assert model(x).shape == (3, 3)
    assert not np.allclose(model(x), model(np.minimum(x + 40, 255)), atol=1e-4)
    assert [w.shape for w in model.get_layer("encoder").token_embedding.weights] == [(16,), (16,)]
    model.save(tmp_path / "model.keras")
    np.testing.assert_array_equal(
        model.predict(x, verbose=0), load_classifier(tmp_path / "model.keras").predict(x, verbose=0)
    )


def test_input_longer_than_max_len_is_one_clear_error():
    with pytest.raises(ValueError, match="input length 25 exceeds max_len=20"):
        build_classifier(tiny())(tokens(length=25))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(qkv_dim=18, num_heads=4), "qkv_dim=18 is not divisible by num_heads=4"),
        (dict(num_heads="2"), "num_heads='2' has the wrong type"),
        (dict(token_embedding="linear"), "token_embedding='linear' is invalid"),
        (dict(pooling="max"), "pooling='max' is invalid; expected one of cls, mean"),
        (dict(dropout=1.5), r"dropout=1.5 is invalid; expected in \[0, 1\)"),
        (dict(padding_id=99), "padding_id=99 is outside the vocabulary"),
    ],
)
def test_bad_config_is_one_clear_error(overrides, message):
    with pytest.raises(ConfigError, match=message):
        tiny(**overrides)


def test_unknown_attention_lists_the_mechanisms():
    with pytest.raises(ValueError, match="unknown attention mechanism 'fast'.*full"):
        build_classifier(tiny(attention="fast"))


def test_unknown_attention_parameter_is_one_clear_error():
    with pytest.raises(ValueError, match="unknown parameter.*window.*for attention 'full'"):
        build_classifier(tiny(attention_params={"window": 3}))


def test_an_encoder_policy_reaches_every_inner_layer():
    from arena_tf.encoder import Encoder

    encoder = Encoder(tiny(), dtype="mixed_float16")
    features = encoder(tokens())
    inner = [layer for layer in encoder._flatten_layers(include_self=False)]
    assert features.dtype == "float16" and len(inner) > 5
    assert {layer.dtype_policy.name for layer in inner} == {"mixed_float16"}
