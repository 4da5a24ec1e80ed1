"""Every mechanism learns: a tiny classifier reaches >= 90% on a task whose label is one far token.

Sequences of 64 random tokens; the label is whether position 50 holds token 1 or token 2. With CLS
pooling the CLS query (position 0) must fetch that token through attention, 50 positions away.
`local` cannot reach across blocks by definition, so it pools by mean over the positions instead.
The budget is 300 steps; the test split is scored every 50, and a mechanism that is there early
stops early.
"""

import keras
import numpy as np
import pytest

import arena_tf.layers as layers
from arena_tf.config import ModelConfig
from arena_tf.models import build_classifier

LENGTH, SIGNAL_AT, STEPS, BATCH, SCORE_EVERY = 64, 50, 300, 32, 50

# Small patterns at this length (blocks of 8 or 16, few hash buckets), and local's mean pooling.
SETTINGS = {
    "local": ({"block_size": 16}, "mean"),
    "performer": ({"num_features": 64}, "cls"),
    "linformer": ({"projected_length": 16}, "cls"),
    "sparse": ({"block_size": 8, "summary_size": 4}, "cls"),  # two hops: block, then summary
    "longformer": ({"window": 16}, "cls"),
    "bigbird": ({"block_size": 8, "num_random_blocks": 1}, "cls"),
    "sinkhorn": ({"block_size": 8}, "cls"),
    "reformer": ({"n_buckets": 2, "chunk_size": 32}, "cls"),
}


def far_token_task(size, seed):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(3, 16, size=(size, LENGTH)).astype("int32")
    labels = rng.integers(0, 2, size=size).astype("int32")
    tokens[:, SIGNAL_AT] = labels + 1
    return tokens, labels


@pytest.mark.slow
@pytest.mark.parametrize("name", layers.available())
def test_tiny_classifier_learns_a_far_token(name):
    params, pooling = SETTINGS.get(name, ({}, "cls"))
    config = ModelConfig(
        attention=name,
        attention_params=params,
        num_layers=2,
        num_heads=2,
        emb_dim=32,
        qkv_dim=32,
        mlp_dim=64,
        dropout=0.0,
        attention_dropout=0.0,
        max_len=LENGTH,
        vocab_size=16,
        num_classes=2,
        pooling=pooling,
        padding_id=0,
    )
    model = build_classifier(config)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    # Every variable exists before the first step, so tf.function traces the step once (a
    # variable made while tracing, an optimizer slot or a metric's, makes it trace twice).
    model.optimizer.build(model.trainable_variables)
    train_x, train_y = far_token_task(STEPS * BATCH, seed=1)
    test_x, test_y = far_token_task(512, seed=2)
    for start in range(0, STEPS * BATCH, SCORE_EVERY * BATCH):
        chunk = slice(start, start + SCORE_EVERY * BATCH)
        model.fit(
            train_x[chunk], train_y[chunk], batch_size=BATCH, epochs=1, verbose=0, shuffle=False
        )
        predicted = np.argmax(model.predict(test_x, batch_size=512, verbose=0), axis=-1)
        accuracy = np.mean(predicted == test_y)
        if accuracy >= 0.9:
            break
    print(f"{name}: test accuracy {accuracy:.3f} after {start // BATCH + SCORE_EVERY} steps")
    assert accuracy >= 0.9, f"{name} reached only {accuracy:.2%} after {STEPS} steps"
