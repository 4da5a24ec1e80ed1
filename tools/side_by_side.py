"""Reproduce the side-by-side ratios of a `python -m arena_tf.benchmark pairs` results file without
arena_tf.benchmark (nothing of it is imported): each pair rebuilt from the configuration the file
records, ours by `arena_tf.layers.get`, the peer by its own class (keras.layers or
official.nlp.modeling.layers) with the recorded constructor arguments, and timed here.

    # exit 1 if a median strays
    python tools/side_by_side.py --check docs/results/efficiency/pairs.json
    # only print the ratios
    python tools/side_by_side.py --from docs/results/efficiency/pairs.json

Per configuration: one tf.function forward + backward step per layer (gradients of the output's
sum for the input and every weight), 2 untimed calls each, then the recorded number of rounds
(--rounds to change it), each timing `calls` calls of each side, alternating which side goes
first; a round's ratio is the peer's median over ours. --check: the median of the rounds' ratios
must lie within the recorded [min, max] widened by --tolerance t, i.e. [min / (1 + t),
max * (1 + t)] (default t = 0.1).
"""

import importlib
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # before TensorFlow: no C++ log

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import arena_tf.layers  # noqa: E402
from arena_tf import cli  # noqa: E402


def key_mask(mask):
    """[batch, L] bool -> [batch, T, S]: every query sees the real keys."""
    return None if mask is None else tf.repeat(mask[:, None, :], mask.shape[1], axis=1)


def multi_head(layer, arguments):
    return lambda x, mask, training: layer(x, x, attention_mask=key_mask(mask), training=training)


def kernel(layer, arguments):
    def call(x, mask, training):
        keys = None if mask is None else tf.cast(mask, x.dtype)
        return layer(x, x, attention_mask=keys, training=training)

    return call


def bigbird(layer, arguments):
    from official.nlp.modeling.layers import BigBirdMasks

    masks = BigBirdMasks(block_size=arguments["from_block_size"])

    def call(x, mask, training):
        real = tf.ones(tf.shape(x)[:2], x.dtype) if mask is None else tf.cast(mask, x.dtype)
        return layer(x, x, attention_mask=masks(x, real), training=training)

    return call


# The peer classes a results file may name -> how each is called with our padding mask.
CALLS = {
    "keras.layers.MultiHeadAttention": multi_head,
    "official.nlp.modeling.layers.block_sparse_attention.MultiHeadAttention": multi_head,
    "official.nlp.modeling.layers.kernel_attention.KernelAttention": kernel,
    "official.nlp.modeling.layers.bigbird_attention.BigBirdAttention": bigbird,
}


def peer(record):
    """(layer, call(x, mask, training)) of the recorded peer."""
    path = record["class"]
    if path not in CALLS:
        raise ValueError(f"unknown peer class {path}; expected one of {', '.join(CALLS)}")
    module, name = path.rsplit(".", 1)
    layer = getattr(importlib.import_module(module), name)(**record["arguments"])
    return layer, CALLS[path](layer, record["arguments"])


def ours(row):
    shape = row["shape"]
    layer = arena_tf.layers.get(
        row["ours"]["name"],
        num_heads=shape["heads"],
        head_dim=shape["head_dim"],
        max_len=row["length"],
        **row["ours"]["params"],
    )
    return layer, lambda x, mask, training: layer(x, mask=mask, training=training)


def train_step(layer, call, mask):
    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(call(x, mask, True))
        return tape.gradient(loss, [x, *layer.trainable_variables])

    return step


def time_pair(row, rounds):
    """The ratios (peer median / ours median) of `rounds` interleaved rounds."""
    shape = row["shape"]
    x = tf.random.normal((shape["batch"], row["length"], shape["heads"] * shape["head_dim"]))
    mask = None if row["mask"] == "none" else tf.sequence_mask(row["valid_lengths"], row["length"])
    steps = {}
    for side, (layer, call) in (("ours", ours(row)), ("peer", peer(row["peer"]))):
        call(x, mask, False)  # builds the weights
        steps[side] = train_step(layer, call, mask)
        for _ in range(2):  # trace, warm up
            steps[side](x)
    ratios = []
    for index in range(rounds):
        seconds = {"ours": [], "peer": []}
        for number in range(row["calls"]):
            for side in ("peer", "ours") if (index + number) % 2 else ("ours", "peer"):
                start = time.perf_counter()
                steps[side](x)
                seconds[side].append(time.perf_counter() - start)
        ratios.append(np.median(seconds["peer"]) / np.median(seconds["ours"]))
    return ratios


def check(row, ratios, tolerance):
    """(within, low, high): whether the median of `ratios` lies in the row's widened range."""
    low, high = row["ratio_min"] / (1 + tolerance), row["ratio_max"] * (1 + tolerance)
    return low <= float(np.median(ratios)) <= high, low, high


def main(argv=None):
    """Command line: time the recorded pairs; exit 1 when a median strays (--check), 2 for bad
    input (one `error:` line)."""
    parser = cli.ArgumentParser(
        prog="python tools/side_by_side.py", description=__doc__.split("\n\n")[0]
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--check",
        metavar="PAIRS_JSON",
        help="time its pairs and check each median against its recorded range",
    )
    source.add_argument(
        "--from",
        dest="source",
        metavar="PAIRS_JSON",
        default="docs/results/efficiency/pairs.json",
        help="time its pairs only",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.1,
        help="t widening the recorded range to [min / (1 + t), max * (1 + t)]",
    )
    parser.add_argument("--rounds", type=int, help="rounds per configuration (default: recorded)")
    options = parser.parse_args(argv)
    return cli.run_main(lambda: side_by_side(options), debug=options.debug)


def side_by_side(options):
    """Time the pairs of the results file `options` names; 1 when a median strays, else 0."""
    rows = recorded_rows(options.check or options.source)
    try:
        return 1 if stray_count(rows, options) else 0
    except ModuleNotFoundError as error:
        raise cli.UsageError(
            error, "the peers' package", 'pip install -c constraints.txt -e ".[peers]"'
        ) from None


def recorded_rows(path):
    """The rows of the pairs results at `path`; a UsageError when they cannot be read."""
    try:
        with open(path) as results:
            return json.load(results)["rows"]
    except (OSError, ValueError, KeyError) as error:
        raise cli.UsageError(
            f"cannot read the pairs results: {error}",
            "the JSON file of `python -m arena_tf.benchmark pairs`",
            "run that first or pass its --output",
        ) from None


def stray_count(rows, options):
    """Time every recorded configuration, print its ratios; the number outside the range."""
    strays = 0
    for row in rows:
        head = f"{row['pair']} batch {row['batch']} {row['mask']}:"
        if "ratio_median" not in row:
            recorded = "unsupported" if "unsupported" in row else "failed"
            print(f"{head} skipped (recorded as {recorded})")
            continue
        ratios = time_pair(row, options.rounds or row["rounds"])
        verdict = ""
        if options.check:
            within, low, high = check(row, ratios, options.tolerance)
            strays += not within
            verdict = f"; {'within' if within else 'OUTSIDE'} [{low:.2f}, {high:.2f}]"
        print(
            f"{head} {np.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}] here, "
            f"recorded {row['ratio_median']:.2f}x [{row['ratio_min']:.2f}-"
            f"{row['ratio_max']:.2f}]{verdict}"
        )
    return strays


if __name__ == "__main__":
    sys.exit(main())
