"""The README's first command: build every mechanism's classifier, print its size and speed.

    python -m arena_tf.demo [--length 1024] [--batch 8]

Each model uses the byte-level text shape of LRA at a small width (2 layers, 4 heads, width 64) so
the whole tour runs in about a minute on 2 CPU cores.
"""

import argparse
import time

import numpy as np

import arena_tf.layers as layers
from arena_tf.config import ModelConfig
from arena_tf.models import build_classifier, count_parameters


def time_forward(model, tokens, repeats=3):
    """Median seconds of a compiled forward pass, after one untimed warm-up call."""
    model.predict_on_batch(tokens)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.predict_on_batch(tokens)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args(argv)
    tokens = np.random.default_rng(0).integers(1, 257, size=(args.batch, args.length)).astype("int32")
    print(f"{'mechanism':<12} {'parameters':>10} {'forward ms':>10}   (batch {args.batch}, length {args.length})")
    for name in layers.available():
        config = ModelConfig(attention=name, max_len=args.length, num_layers=2, num_heads=4,
                             emb_dim=64, qkv_dim=64, mlp_dim=128)
        model = build_classifier(config)
        seconds = time_forward(model, tokens)
        print(f"{name:<12} {count_parameters(model):>10,} {seconds * 1000:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
