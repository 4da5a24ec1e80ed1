"""The efficiency targets: speed-ups over the peers, full's share of the matmul rate, growth from
4K to 16K and memory, judged on the results of `layers` and `train` (and the mixers' `layers` run,
held to the growth target of the linear-time mechanisms, and `full`'s own run at 16K); and higher
speed-ups over the peers, judged on the results of `pairs`, where each pair is timed side by side
in one process, in interleaved rounds, so that a drift of the machine hits both alike.

Each target gives a record {target, value, threshold, met, detail}; `met` is None when the results
needed are missing (not measured, skipped or failed), and the detail says which.
"""

import math

from arena_tf.benchmark import paper

JUDGED_LENGTH = 4096
# (our row label, peer, minimum speed-up of ours over the peer in forward + backward time).
PEER_TARGETS = (
    ("performer", "kernel_exp", 1.3),
    ("linear", "kernel_elu", 1.3),
    ("bigbird", "bigbird_tfm", 1.3),
    ("local[block_size=64]", "block_sparse", 1.0),
    ("full", "keras_mha", 1.0),
)
# (our row label, peer, minimum speed-up, speed-up aimed at or None), judged on `pairs`: the median
# of the interleaved rounds' ratios in every (batch, mask) configuration at JUDGED_LENGTH.
PAIR_TARGETS = (
    ("performer", "kernel_exp", 2.0, None),
    ("linear", "kernel_elu", 2.0, None),
    ("bigbird", "bigbird_tfm", 2.0, 3.0),
    ("local[block_size=64]", "block_sparse", 1.5, None),
    ("full", "keras_mha", 1.2, None),
)
# Mechanisms linear in length, whose time and memory at 16K must stay within 4.5x those at 4K.
LINEAR_IN_LENGTH = ("linear", "performer", "linformer", "local", "longformer", "bigbird")
# The state-space mixers (O(L log L) for the FFT, O(L) otherwise) are held to the same growth.
MIXERS = ("s4d", "s5", "mega")
GROWTH_LIMIT = 4.5
MATMUL_FRACTION = 0.7  # the share of the matmul rate full's forward + backward must reach at 4K
MEMORY_SHARE = 1 / 8
# Exact attention (`full`, blockwise from 8,192 keys) must train one layer at 16K in 4 GB.
EXACT_LENGTH = 16384
EXACT_MEMORY_MB = 4096
LOW_MEMORY = ("linear", "performer", "linformer", "local")


def measured(rows, label, length, stage="train"):
    """The row of `label` at `length` if it was measured, else None."""
    for row in rows:
        if row.get("label", row.get("name")) == label and row["length"] == length and stage in row:
            return row
    return None


def record(target, value, threshold, met, detail=""):
    return {"target": target, "value": value, "threshold": threshold, "met": met, "detail": detail}


def missing(target, threshold, what):
    return record(target, None, threshold, None, f"not measured: {what}")


def speedups(rows, ours, peer, stage):
    """{length: peer time / our time} wherever both were measured."""
    found = {}
    for length in sorted({row["length"] for row in rows}):
        mine, theirs = measured(rows, ours, length, stage), measured(rows, peer, length, stage)
        if mine and theirs:
            found[length] = theirs[stage]["median_ms"] / mine[stage]["median_ms"]
    return found


def peer_targets(rows):
    judged = []
    for ours, peer, minimum in PEER_TARGETS:
        target = (
            f"{ours} >= {minimum:g}x as fast as {peer} (forward + backward, {JUDGED_LENGTH}; "
            "the side-by-side target below is higher)"
        )
        train, forward = speedups(rows, ours, peer, "train"), speedups(rows, ours, peer, "forward")
        if JUDGED_LENGTH not in train:
            judged.append(missing(target, minimum, f"{ours} or {peer} at {JUDGED_LENGTH}"))
            continue
        detail = (
            "fwd+bwd "
            + ", ".join(f"{k}: {v:.2f}x" for k, v in train.items())
            + "; forward "
            + ", ".join(f"{k}: {v:.2f}x" for k, v in forward.items())
        )
        value = train[JUDGED_LENGTH]
        judged.append(record(target, value, minimum, value >= minimum, detail))
    return judged


def configuration_text(row):
    """A pairs configuration in the detail of its target: "batch 4, padded: 2.31x [2.10-2.52]"."""
    head = f"batch {row['batch']}, {row['mask']}: "
    if "ratio_median" in row:
        return head + f"{row['ratio_median']:.2f}x [{row['ratio_min']:.2f}-{row['ratio_max']:.2f}]"
    return head + ("unsupported by the peer" if "unsupported" in row else "failed")


def pair_target(rows, ours, peer, minimum, aim):
    """Met when the median ratio of every measured configuration of the pair reaches `minimum`
    (configurations the peer cannot run are listed, not judged); None when one failed and none
    missed, or none was measured. The value is the lowest median."""
    target = (
        f"{ours} >= {minimum:g}x as fast as {peer} side by side (fwd+bwd, "
        f"{JUDGED_LENGTH}, every batch and mask)"
    )
    mine = [
        row for row in rows if row["pair"] == f"{ours}:{peer}" and row["length"] == JUDGED_LENGTH
    ]
    medians = [row["ratio_median"] for row in mine if "ratio_median" in row]
    if not medians:
        return missing(target, minimum, f"{ours}:{peer} at {JUDGED_LENGTH} in the pairs results")
    value = min(medians)
    failed = any("error" in row for row in mine)
    met = False if value < minimum else (None if failed else True)
    detail = "median [min-max] of the rounds' ratios: " + "; ".join(map(configuration_text, mine))
    if aim:
        reached = sum(median >= aim for median in medians)
        detail += f"; aim {aim:g}x: reached in {reached} of {len(medians)}"
    return record(target, value, minimum, met, detail)


def pair_targets(results):
    return [pair_target(results["rows"], *target) for target in PAIR_TARGETS]


def matmul_fraction_target(rows):
    target = (
        f"full forward + backward at {JUDGED_LENGTH} >= {MATMUL_FRACTION:.0%} of the matmul rate"
    )
    full = measured(rows, "full", JUDGED_LENGTH)
    fractions = {
        row.get("label"): row["train"]["matmul_fraction"]
        for row in rows
        if row["length"] == JUDGED_LENGTH and "train" in row
    }
    lowest = min(fractions, key=fractions.get) if fractions else None
    detail = f"lowest at {JUDGED_LENGTH}: {lowest} ({fractions[lowest]:.1%})" if lowest else ""
    if not full:
        return missing(target, MATMUL_FRACTION, f"full at {JUDGED_LENGTH}")
    value = full["train"]["matmul_fraction"]
    return record(target, value, MATMUL_FRACTION, value >= MATMUL_FRACTION, detail)


def growth_targets(rows, names=LINEAR_IN_LENGTH, long=16384):
    judged = []
    for name in names:
        target = f"{name}: time and memory at {long} <= {GROWTH_LIMIT:g}x those at {JUDGED_LENGTH}"
        short_row, long_row = measured(rows, name, JUDGED_LENGTH), measured(rows, name, long)
        if not (short_row and long_row):
            judged.append(missing(target, GROWTH_LIMIT, f"{name} at {JUDGED_LENGTH} or {long}"))
            continue
        time_growth = long_row["train"]["median_ms"] / short_row["train"]["median_ms"]
        memory_growth = long_row["train"]["peak_mb"] / max(short_row["train"]["peak_mb"], 1.0)
        value = max(time_growth, memory_growth)
        detail = f"time x{time_growth:.2f}, memory x{memory_growth:.2f} (fwd+bwd)"
        judged.append(record(target, value, GROWTH_LIMIT, value <= GROWTH_LIMIT, detail))
    return judged


def exact_memory_target(rows):
    """Peak memory of full's forward + backward at EXACT_LENGTH (one layer), judged on the
    results of its own `layers` run (docs/results/efficiency/exact.json)."""
    target = (
        f"full (exact, blockwise) forward + backward at {EXACT_LENGTH} within "
        f"{EXACT_MEMORY_MB} MB (one layer)"
    )
    row = measured(rows, "full", EXACT_LENGTH)
    if not row:
        return missing(target, EXACT_MEMORY_MB, f"full at {EXACT_LENGTH}")
    value = row["train"]["peak_mb"]
    detail = f"{value:.0f} MB above the baseline, {row['train']['median_ms'] / 1e3:.1f} s per call"
    return record(target, value, EXACT_MEMORY_MB, value <= EXACT_MEMORY_MB, detail)


def per_example_memory(row):
    return row["peak_mb"] / row["batch"]


def examples_per_second(row):
    return row["steps_per_second"] * row["batch"]


def memory_targets(train_rows):
    """Per example, each low-memory mechanism trained with train.remat against full without."""
    judged = []
    full = training_row(train_rows, "full", JUDGED_LENGTH)
    for name in LOW_MEMORY:
        target = f"{name} with train.remat: training memory at {JUDGED_LENGTH} <= 1/8 of full's"
        mine = training_row(train_rows, name, JUDGED_LENGTH, remat=True)
        if not (full and mine):
            judged.append(
                missing(target, MEMORY_SHARE, f"{name} with remat or full at {JUDGED_LENGTH}")
            )
            continue
        value = per_example_memory(mine) / per_example_memory(full)
        detail = (
            f"{mine['peak_mb']:.0f} MB (batch {mine['batch']}, remat) vs full "
            f"{full['peak_mb']:.0f} MB (batch {full['batch']}), per example"
        )
        judged.append(record(target, value, MEMORY_SHARE, value <= MEMORY_SHARE, detail))
    return judged


def training_row(rows, name, length, jit=False, remat=False):
    for row in rows:
        key = (row["name"], row["length"], row["jit"], row.get("remat", False))
        if key == (name, length, jit, remat) and "step" in row:
            return row
    return None


def relative_speed(rows, name, length, jit=False):
    """Steps/s of `name` over full's (per example, in case their batches differ), or None."""
    mine, full = training_row(rows, name, length, jit), training_row(rows, "full", length, jit)
    if not (mine and full):
        return None
    return examples_per_second(mine) / examples_per_second(full)


def flops_ratio(rows, name, length):
    """full's training FLOPs over `name`'s, per example."""
    mine, full = training_row(rows, name, length), training_row(rows, "full", length)
    if not (mine and full):
        return None
    return (full["train_flops"] / full["batch"]) / (mine["train_flops"] / mine["batch"])


def speed_comparison(train_rows, jit=False):
    """Per mechanism at 4K: our speed relative to full, the paper's, the FLOPs ratio, and which
    of the two our ratio is nearest (on a log scale)."""
    table = []
    for name, published in paper.SPEEDUP_4K.items():
        ours = relative_speed(train_rows, name, JUDGED_LENGTH, jit)
        bound = flops_ratio(train_rows, name, JUDGED_LENGTH)
        nearest = None
        if ours and bound:
            nearest = min(
                (("paper", published), ("FLOPs", bound)),
                key=lambda item: abs(math.log(ours / item[1])),
            )[0]
        table.append(
            {
                "name": name,
                "ours": ours,
                "paper": published,
                "flops_ratio": bound,
                "nearest": nearest,
            }
        )
    return table


def evaluate(
    layer_results=None,
    train_results=None,
    mixer_results=None,
    pair_results=None,
    exact_results=None,
):
    """Every target's record, from whichever results exist."""
    judged = []
    if layer_results:
        rows = layer_results["rows"]
        judged += peer_targets(rows) + [matmul_fraction_target(rows)] + growth_targets(rows)
    if pair_results:
        judged += pair_targets(pair_results)
    if mixer_results:
        judged += growth_targets(mixer_results["rows"], MIXERS)
    if exact_results:
        judged.append(exact_memory_target(exact_results["rows"]))
    if train_results:
        judged += memory_targets(train_results["rows"])
    return judged
